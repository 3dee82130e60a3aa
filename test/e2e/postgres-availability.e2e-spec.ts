import { request } from '../support/http';
import { createTestSchema, describePostgres, TestSchema, viaPort } from '../support/postgres';
import { TcpProxy } from '../support/tcp-proxy';
import { createTestApp, TestApp } from '../support/test-app';

describePostgres('when PostgreSQL goes away and comes back (e2e)', () => {
  let schema: TestSchema;
  let proxy: TcpProxy;
  let server: TestApp;

  beforeAll(async () => {
    schema = await createTestSchema();
    const target = new URL(schema.url);
    proxy = new TcpProxy(target.hostname, Number(target.port || 5432));
    await proxy.start();
    server = await createTestApp({ DATABASE_URL: viaPort(schema.url, proxy.port) });
  });
  afterAll(async () => {
    await server.destroy();
    await proxy.cut();
    await schema.drop();
  });

  const create = (id: number, name: string) => request(`${server.url}/plants`, { body: { id, name } });

  it('should answer 503 with the Error body while it is away, and recover on its own', async () => {
    expect((await create(1, 'before')).status).toBe(200);

    await proxy.cut();
    const during = await create(2, 'during');
    expect(during.status).toBe(503);
    expect(during.body).toEqual({
      error: 503,
      message: 'The database is unavailable; the plant was not stored, retry shortly',
    });
    expect(server.logs.join('\n')).not.toContain('Internal server error');

    await proxy.start();
    expect((await create(2, 'during')).body).toEqual({ name: 'during' });
    expect((await create(1, 'other')).status).toBe(409);
  });

  it('should keep answering after the server terminates its connections', async () => {
    expect((await create(10, 'first')).status).toBe(200);
    await schema.admin('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1', [
      schema.name,
    ]);
    const results = await Promise.all([create(11, 'a'), create(12, 'b'), create(10, 'first')]);
    expect(results.map((result) => result.status)).toEqual([200, 200, 200]);
  });
});
