import { request } from '../support/http';
import { createTestSchema, describePostgres, TestSchema, viaPort } from '../support/postgres';
import { TcpProxy } from '../support/tcp-proxy';
import { createTestApp, TestApp } from '../support/test-app';

/** The service on a fresh PostgreSQL schema, reached through a TCP proxy the test controls. */
class BehindProxy {
  private constructor(
    readonly schema: TestSchema,
    readonly proxy: TcpProxy,
    readonly server: TestApp,
  ) {}

  static async start(env: NodeJS.ProcessEnv = {}): Promise<BehindProxy> {
    const schema = await createTestSchema();
    const target = new URL(schema.url);
    const proxy = new TcpProxy(target.hostname, Number(target.port || 5432));
    await proxy.start();
    const server = await createTestApp({ DATABASE_URL: viaPort(schema.url, proxy.port), ...env });
    return new BehindProxy(schema, proxy, server);
  }

  create(id: number, name: string) {
    return request(`${this.server.url}/plants`, { body: { id, name } });
  }

  async stop(): Promise<void> {
    await this.server.destroy();
    await this.proxy.cut();
    await this.schema.drop();
  }
}

describePostgres('when PostgreSQL goes away and comes back (e2e)', () => {
  let setup: BehindProxy;
  beforeAll(async () => (setup = await BehindProxy.start()));
  afterAll(() => setup.stop());

  const create = (id: number, name: string) => setup.create(id, name);

  it('should answer 503 with the Error body while it is away, and recover on its own', async () => {
    expect((await create(1, 'before')).status).toBe(200);

    await setup.proxy.cut();
    const during = await create(2, 'during');
    expect(during.status).toBe(503);
    expect(during.body).toEqual({
      error: 503,
      message: 'The database is unavailable; the plant was not stored, retry shortly',
    });
    expect(setup.server.logs.join('\n')).not.toContain('Internal server error');

    await setup.proxy.start();
    expect((await create(2, 'during')).body).toEqual({ name: 'during' });
    expect((await create(1, 'other')).status).toBe(409);
  });

  it('should answer reads and deletes with a 503 that says what happened while it is away', async () => {
    expect((await create(3, 'kept')).status).toBe(200);
    await setup.proxy.cut();
    const call = (method: string, path: string) => request(`${setup.server.url}${path}`, { method });
    expect((await call('GET', '/plants')).body).toEqual({
      error: 503,
      message: 'The database is unavailable; retry shortly',
    });
    expect((await call('GET', '/plants/3')).body).toEqual({
      error: 503,
      message: 'The database is unavailable; retry shortly',
    });
    expect((await call('DELETE', '/plants/3')).body).toEqual({
      error: 503,
      message: 'The database is unavailable; the plant was not deleted, retry shortly',
    });
    await setup.proxy.start();
    expect((await call('GET', '/plants/3')).body).toEqual({ id: 3, name: 'kept' });
  });

  it('should keep answering after the server terminates its connections', async () => {
    expect((await create(10, 'first')).status).toBe(200);
    await setup.schema.admin('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1', [
      setup.schema.name,
    ]);
    const results = await Promise.all([create(11, 'a'), create(12, 'b'), create(10, 'first')]);
    expect(results.map((result) => result.status)).toEqual([200, 200, 200]);
  });
});

describePostgres('when PostgreSQL hangs (e2e)', () => {
  const TIMEOUT_MESSAGE =
    'The database did not answer in time; the plant may or may not be stored: send the same request again (a replay is safe)';
  let setup: BehindProxy;
  beforeAll(async () => (setup = await BehindProxy.start({ DATABASE_QUERY_TIMEOUT_MS: '1500' })));
  afterEach(() => setup.proxy.thaw());
  afterAll(() => setup.stop());

  const create = (id: number, name: string) => setup.create(id, name);

  // Each test starts with an idle pooled connection (from the create before the freeze), so the
  // create during the freeze is sent at once and waits on the query timeout, not the connect timeout.
  it('should answer 503 once the query timeout passes, and recover when the server answers again', async () => {
    expect((await create(1, 'before')).status).toBe(200);

    setup.proxy.freeze();
    const during = await create(2, 'during');
    expect(during.status).toBe(503);
    expect(during.body).toEqual({ error: 503, message: TIMEOUT_MESSAGE });
    expect(setup.server.logs.join('\n')).not.toContain('Internal server error');

    setup.proxy.thaw();
    // The stuck connection was closed, not lent out again: the next create gets a fresh one.
    expect(await create(2, 'during')).toMatchObject({ status: 200, body: { name: 'during' } });
  });

  it('should not claim a plant was not stored when only the answer was lost', async () => {
    expect((await create(10, 'before')).status).toBe(200);

    setup.proxy.freeze('answers');
    expect((await create(11, 'committed')).body).toEqual({ error: 503, message: TIMEOUT_MESSAGE });

    setup.proxy.thaw();
    // The insert reached the server and committed: the same request again is a replay.
    expect(await create(11, 'committed')).toMatchObject({ status: 200, body: { name: 'committed' } });
    expect((await create(11, 'other')).status).toBe(409);
  });
});
