import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { request, RequestOptions } from '../support/http';
import { eventually } from '../support/eventually';
import { createTestSchema, describeOnEachStore, TestSchema } from '../support/postgres';
import { runUntilExit } from '../support/service-process';
import { createTestApp, TestApp } from '../support/test-app';
import { LOOPBACK_NETWORKS, makeSecret, WebhookReceiver } from '../support/webhook-receiver';

const ADMIN = 'admin-token-0123456789abcdef-0123456789';
const TOKEN = 'plants-token-0123456789abcdef-0123456789';
const KEY = Buffer.alloc(32, 0x3c).toString('base64');
const OPEN = 'an operator can open its range with WEBHOOK_ALLOWED_NETWORKS';
const SPECIAL = `url must not point to a private or special-purpose address; ${OPEN}`;
const HTTPS_RULE =
  'must be https when NODE_ENV=production (plain http only to an IP address inside WEBHOOK_ALLOWED_NETWORKS)';

interface EndpointBody {
  id: string;
  secret: string;
}

describeOnEachStore('webhook network rules (e2e on %s, receivers on 127.0.0.1)', (postgres) => {
  let server: TestApp | undefined;
  let schema: TestSchema | undefined;
  let dataDir: string | undefined;
  const receivers: WebhookReceiver[] = [];

  /** Starts (or restarts, on the same store) the app. */
  const start = async (env: Record<string, string>) => {
    schema ??= postgres ? await createTestSchema() : undefined;
    server = await createTestApp(
      {
        ...(schema ? { DATABASE_URL: schema.url } : {}),
        AUTH_TOKENS: TOKEN,
        ADMIN_TOKENS: ADMIN,
        WEBHOOK_SECRETS_KEY: KEY,
        WEBHOOK_RETRY_SCHEDULE: '50ms',
        WEBHOOK_POLL_INTERVAL_MS: '50',
        ...env,
      },
      dataDir,
    );
    dataDir = server.dataDir;
  };
  const admin = (path: string, options: RequestOptions = {}) =>
    request(`${server!.url}${path}`, { method: 'GET', auth: `Bearer ${ADMIN}`, ...options });
  const save = (url: string, disabled = false) =>
    admin('/webhooks/endpoints', { method: 'POST', body: { url, disabled } });
  const create = (id: number) =>
    request(`${server!.url}/plants`, { body: { id, name: `plant ${id}` }, auth: `Bearer ${TOKEN}` });
  const receiver = async (secrets: string[] = []) => {
    const made = new WebhookReceiver(secrets);
    await made.start();
    receivers.push(made);
    return made;
  };
  /** The error of the last attempt of an endpoint's failed delivery, once it has failed. */
  const failedWith = async (id: string) => {
    const failed = async () =>
      (await admin(`/webhooks/endpoints/${id}/deliveries?status=failed`)).body as { lastAttempt: { error: string } }[];
    await eventually(async () => (await failed()).length === 1);
    return (await failed())[0].lastAttempt.error;
  };

  afterEach(async () => {
    for (const made of receivers.splice(0)) await made.stop();
    await server?.destroy();
    await schema?.drop();
    server = undefined;
    schema = undefined;
    dataDir = undefined;
  });

  it('should keep loopback and 169.254.169.254 blocked when WEBHOOK_BLOCKED_NETWORKS lists 10.0.0.0/8, block what it adds, and open only what WEBHOOK_ALLOWED_NETWORKS opens', async () => {
    const target = await receiver();
    await start({ WEBHOOK_BLOCKED_NETWORKS: '10.0.0.0/8,8.8.8.0/24' });
    for (const url of [
      target.url,
      'http://169.254.169.254/latest/meta-data',
      'http://10.1.2.3/x',
      'http://[::1]:9/x',
    ]) {
      expect(await save(url)).toMatchObject({ status: 400, body: { error: 400, message: SPECIAL } });
    }
    expect(await save('http://8.8.8.8/x')).toMatchObject({
      status: 400,
      body: { error: 400, message: `url must not point to an address in WEBHOOK_BLOCKED_NETWORKS; ${OPEN}` },
    });
    expect((await save('http://8.8.4.4/x', true)).status).toBe(201); // public, not listed (disabled: sends nowhere)
    await server!.close();

    // Opened: loopback and one address of the added range; the metadata address stays blocked.
    await start({
      WEBHOOK_BLOCKED_NETWORKS: '10.0.0.0/8,8.8.8.0/24',
      WEBHOOK_ALLOWED_NETWORKS: `${LOOPBACK_NETWORKS},8.8.8.8/32`,
    });
    expect((await save('http://169.254.169.254/latest/meta-data')).body).toEqual({ error: 400, message: SPECIAL });
    expect((await save('http://10.1.2.3/x')).body).toEqual({ error: 400, message: SPECIAL });
    expect((await save('http://8.8.8.8/x', true)).status).toBe(201);
    const saved = await save(target.url);
    expect(saved.status).toBe(201);
    target.trust((saved.body as EndpointBody).secret);
    expect((await create(1)).status).toBe(200);
    await target.waitFor(() => target.received.length === 1);
    expect(target.received[0].verifiedBy).toEqual([0]);
  });

  it('should refuse plain http in production with a 400 naming the rule (POST and PATCH), except to an IP address inside WEBHOOK_ALLOWED_NETWORKS', async () => {
    const target = await receiver();
    await start({ NODE_ENV: 'production', WEBHOOK_ALLOWED_NETWORKS: LOOPBACK_NETWORKS });
    const refused = { status: 400, body: { error: 400, message: `url ${HTTPS_RULE}` } };
    // A name is not enough, even one that resolves into an opened range.
    expect(await save(`http://localhost:${target.port}/hooks`)).toMatchObject(refused);
    expect(await save('http://8.8.8.8/hooks')).toMatchObject(refused);
    expect((await save('https://8.8.8.8/hooks', true)).status).toBe(201);
    const saved = await save(target.url);
    expect(saved.status).toBe(201);
    const { id, secret } = saved.body as EndpointBody;
    expect(
      await admin(`/webhooks/endpoints/${id}`, { method: 'PATCH', body: { url: 'http://receiver.example/x' } }),
    ).toMatchObject(refused);
    target.trust(secret);
    expect((await create(1)).status).toBe(200);
    await target.waitFor(() => target.received.length === 1);
    expect(target.received[0].verifiedBy).toEqual([0]);
  });

  it('should warn once at start-up about each stored endpoint the rules now refuse (by id and origin), fail its sends naming the rule, and delete nothing', async () => {
    const target = await receiver();
    // Saved where they were allowed: outside production, with loopback opened.
    await start({ WEBHOOK_ALLOWED_NETWORKS: LOOPBACK_NETWORKS });
    const byName = ((await save(`http://localhost:${target.port}/hooks?token=hunter2`)).body as EndpointBody).id;
    const loopback = ((await save(`https://127.0.0.2:${target.port}/tls`)).body as EndpointBody).id;
    const opened = await save(`http://127.0.0.1:${target.port}/kept`);
    const kept = opened.body as EndpointBody;
    target.trust(kept.secret);
    await server!.close();

    // Production now, with 10.0.0.0/8 added to the blocked ranges and only 127.0.0.1 opened.
    await start({
      NODE_ENV: 'production',
      WEBHOOK_BLOCKED_NETWORKS: '10.0.0.0/8',
      WEBHOOK_ALLOWED_NETWORKS: '127.0.0.1/32',
    });
    const warnings = () => server!.logs.filter((line) => line.startsWith('Endpoint '));
    await eventually(() => warnings().length === 2);
    expect(warnings().sort()).toEqual(
      [
        `Endpoint ${byName} (http://localhost:${target.port}) is plain http: its url ${HTTPS_RULE}, so its sends fail until its url changes`,
        `Endpoint ${loopback} (https://127.0.0.2:${target.port}) is a private or special-purpose address: ` +
          `its sends fail until an operator opens its range with WEBHOOK_ALLOWED_NETWORKS (e.g. 127.0.0.2/32) or its url changes`,
      ].sort(),
    );
    expect(server!.logs.join('\n')).not.toMatch(/hunter2|\/hooks|\/tls|\/kept/);

    expect((await create(1)).status).toBe(200);
    expect(await failedWith(byName)).toBe(`url ${HTTPS_RULE}; not connecting`);
    expect(await failedWith(loopback)).toBe(
      '127.0.0.2 is a blocked address; not connecting (an operator can open its range with WEBHOOK_ALLOWED_NETWORKS)',
    );
    // The one the rules allow delivers; nothing was deleted.
    await target.waitFor(() => target.received.length === 1);
    expect(target.received[0].verifiedBy).toEqual([0]);
    const ids = ((await admin('/webhooks/endpoints')).body as { id: string }[]).map(({ id }) => id);
    expect(ids).toEqual([byName, loopback, kept.id]);
    expect(warnings()).toHaveLength(2);
  });
});

describe('webhook network rules, the built service (e2e on SQLite)', () => {
  it('should refuse to start in production with one line naming WEBHOOK_URLS when one of them is plain http', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'plant-store-rules-'));
    const { code, stderr } = await runUntilExit({
      NODE_ENV: 'production',
      DATABASE_URL: `sqlite:${join(dir, 'plants.db')}`,
      DATA_DIR: dir,
      AUTH_TOKENS: TOKEN,
      WEBHOOK_URLS: 'https://hooks.example/a,http://hooks.example/b?token=hunter2',
      WEBHOOK_SECRET: makeSecret(),
    });
    rmSync(dir, { recursive: true, force: true });
    expect(code).toBe(1);
    expect(stderr).toBe(`Invalid configuration: each of WEBHOOK_URLS ${HTTPS_RULE}\n`);
  });
});
