import { copyFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import { request, RequestOptions } from '../support/http';
import { createTestApp, TestApp } from '../support/test-app';
import { LOOPBACK_NETWORKS, WebhookReceiver } from '../support/webhook-receiver';

/** test/fixtures/sealed-secrets-v1: a database written by the build of 9210f85 (see its README). */
const FIXTURE = join(__dirname, '..', 'fixtures', 'sealed-secrets-v1', 'plants.db');
const KEY = Buffer.alloc(32, 0x42).toString('base64');
const ADMIN = 'fixture-admin-token-0123456789abcdef';
const A = { id: 'ep_01a222ff87a600009b136cc76188', secret: 'whsec_Q+D1D9mmg1k0LV6/3ksvur5rV4O6tjBewbSEyCpz8uw=' };
const B = { id: 'ep_01a222ff87ca000013b4f6e14f9c', secret: 'whsec_fu5+8LcJRoQJuSyCdagBbbJd53ybM+8oT86OAEtrk8A=' };
/** The webhook-id of the first plant's event, pending for both endpoints in the fixture. */
const MONSTERA_EVENT = 'msg_1e8715526fc744dca7e82f4ae57dd280';

describe('a database made by the build before secrets were bound to their endpoint (e2e on SQLite)', () => {
  let dir: string;
  let server: TestApp | undefined;
  const receivers: WebhookReceiver[] = [];

  const start = async () => {
    server = await createTestApp(
      {
        ADMIN_TOKENS: ADMIN,
        WEBHOOK_SECRETS_KEY: KEY,
        WEBHOOK_ALLOWED_NETWORKS: LOOPBACK_NETWORKS,
        WEBHOOK_RETRY_SCHEDULE: '100ms,100ms',
        WEBHOOK_POLL_INTERVAL_MS: '50',
      },
      dir,
    );
    return server;
  };
  const admin = (path: string, options: RequestOptions = {}) =>
    request(`${server!.url}${path}`, { method: 'GET', auth: `Bearer ${ADMIN}`, ...options });
  const stored = () => {
    const db = new BetterSqlite3(join(dir, 'plants.db'), { readonly: true });
    try {
      const rows = db.prepare('SELECT id, secrets FROM webhook_endpoints ORDER BY id').all() as {
        id: string;
        secrets: string;
      }[];
      return Object.fromEntries(rows.map((row) => [row.id, row.secrets]));
    } finally {
      db.close();
    }
  };

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'plant-store-upgrade-'));
    copyFileSync(FIXTURE, join(dir, 'plants.db'));
  });
  afterEach(async () => {
    for (const made of receivers.splice(0)) await made.stop();
    await server?.close();
    server = undefined;
    rmSync(dir, { recursive: true, force: true });
  });

  it('should keep its plants, serve and sign with its secrets unchanged, and reseal them bound to their endpoints', async () => {
    expect(Object.values(stored()).every((value) => /^enc:v1:[0-9a-f]{8}:/.test(value))).toBe(true);
    await start();
    expect(server!.logs).toContain(
      'Encrypted the stored secrets of 2 webhook endpoint(s) with the first WEBHOOK_SECRETS_KEY',
    );

    const plants = await request(`${server!.url}/plants`, { method: 'GET' });
    expect([plants.status, plants.text]).toEqual([
      200,
      '[{"id":-42,"name":"Ficus"},{"id":9007199254740993,"name":"Monstera","tag":"sealed"}]',
    ]);
    expect((await admin(`/webhooks/endpoints/${A.id}/secret`)).body).toEqual({ secret: A.secret });
    expect((await admin(`/webhooks/endpoints/${B.id}/secret`)).body).toEqual({ secret: B.secret });
    const resealed = stored();
    expect(resealed[A.id]).toMatch(/^enc:v1:v2:[0-9a-f]{8}:/);
    expect(resealed[B.id]).toMatch(/^enc:v1:v2:[0-9a-f]{8}:/);

    // Both endpoints moved to receivers of this test: the fixture's pending event, resent, and a new one arrive signed.
    const [toA, toB] = [new WebhookReceiver([A.secret]), new WebhookReceiver([B.secret])];
    receivers.push(toA, toB);
    await Promise.all([toA.start(), toB.start()]);
    for (const [endpoint, target] of [
      [A, toA],
      [B, toB],
    ] as const) {
      const moved = await admin(`/webhooks/endpoints/${endpoint.id}`, { method: 'PATCH', body: { url: target.url } });
      expect(moved.status).toBe(200);
      // Endpoints from before event types subscribe to the one there was: their creates still reach them.
      expect((moved.body as { eventTypes: string[] }).eventTypes).toEqual(['plant.created']);
    }
    const resend = await admin(`/webhooks/endpoints/${A.id}/deliveries/${MONSTERA_EVENT}/resend`, { method: 'POST' });
    expect(resend.status).toBe(202);
    expect((await request(`${server!.url}/plants`, { body: { id: 7, name: 'Fern' } })).status).toBe(200);
    await toA.waitFor(() => toA.received.length === 2);
    await toB.waitFor(() => toB.received.length === 1);
    expect(toA.received.map(({ webhookId, body, verifiedBy }) => ({ webhookId, body, verifiedBy }))).toEqual(
      expect.arrayContaining([
        {
          webhookId: MONSTERA_EVENT,
          body: '{"id":9007199254740993,"name":"Monstera","tag":"sealed"}',
          verifiedBy: [0],
        },
        { webhookId: expect.any(String), body: '{"id":7,"name":"Fern"}', verifiedBy: [0] },
      ]),
    );
    expect(toB.received.map(({ body, verifiedBy }) => ({ body, verifiedBy }))).toEqual([
      { body: '{"id":7,"name":"Fern"}', verifiedBy: [0] },
    ]);

    // Resealed: A's value copied into B's row no longer opens there; a restart finds nothing more to reseal.
    await server!.close();
    const db = new BetterSqlite3(join(dir, 'plants.db'));
    try {
      db.prepare('UPDATE webhook_endpoints SET secrets = ? WHERE id = ?').run(resealed[A.id], B.id);
    } finally {
      db.close();
    }
    await start();
    expect(server!.logs.filter((line) => line.startsWith('Encrypted'))).toEqual([]);
    expect((await admin(`/webhooks/endpoints/${A.id}/secret`)).body).toEqual({ secret: A.secret });
    expect(await admin(`/webhooks/endpoints/${B.id}/secret`)).toMatchObject({
      status: 409,
      body: {
        error: 409,
        message: `The stored secret of endpoint ${B.id} cannot be used: a secret does not decrypt with its key for this endpoint: it was altered, or copied from another endpoint`,
      },
    });
  });
});
