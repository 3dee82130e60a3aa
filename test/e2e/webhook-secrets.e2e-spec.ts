import { existsSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import { SECRETS_KEY_FILE } from '../../src/webhooks/secrets/secrets-cipher';
import { request, RequestOptions } from '../support/http';
import { createTestSchema, describeOnEachStore, TestSchema } from '../support/postgres';
import { runUntilExit, ServiceProcess, startService } from '../support/service-process';
import { createTestApp, TestApp } from '../support/test-app';
import { makeSecret, WebhookReceiver } from '../support/webhook-receiver';

const ADMIN = 'admin-token-0123456789abcdef-0123456789';
const KEY_A = Buffer.alloc(32, 0xa1).toString('base64');
const KEY_B = Buffer.alloc(32, 0xb2).toString('base64');
const WRONG_KEY_LINE =
  /^Invalid configuration: WEBHOOK_SECRETS_KEY cannot decrypt the stored webhook endpoint secrets: a secret is encrypted with a key that is not in WEBHOOK_SECRETS_KEY \(endpoint ep_[0-9a-f]+\); give the key they were encrypted with \(comma-separated keys: the first encrypts, every one decrypts\)\n$/;

/** The forms in which a secret could sit in storage: `whsec_…`, its base64 text, its raw bytes. */
function spellings(secret: string): Buffer[] {
  const base64 = secret.slice('whsec_'.length);
  return [Buffer.from(secret), Buffer.from(base64), Buffer.from(base64, 'base64')];
}

describeOnEachStore('webhook endpoint secrets at rest (e2e on %s)', (postgres) => {
  let server: TestApp | undefined;
  let schema: TestSchema | undefined;
  let dataDir: string | undefined;
  const receivers: WebhookReceiver[] = [];

  /** Starts (or restarts, on the same data) the app; `key` undefined: none given (SQLite makes one). */
  const start = async (key: string | undefined, env: Record<string, string> = {}) => {
    schema ??= postgres ? await createTestSchema() : undefined;
    server = await createTestApp(
      {
        ...(schema ? { DATABASE_URL: schema.url } : {}),
        ADMIN_TOKENS: ADMIN,
        WEBHOOK_SECRETS_KEY: key ?? '',
        WEBHOOK_ALLOWED_NETWORKS: '127.0.0.0/8,::1/128',
        WEBHOOK_RETRY_SCHEDULE: '100ms,100ms',
        WEBHOOK_POLL_INTERVAL_MS: '50',
        ...env,
      },
      dataDir,
    );
    dataDir = server.dataDir;
    return server;
  };
  const restart = async (key: string | undefined, env: Record<string, string> = {}) => {
    await server!.close();
    return start(key, env);
  };
  const admin = (path: string, options: RequestOptions = {}) =>
    request(`${server!.url}${path}`, { method: 'GET', auth: `Bearer ${ADMIN}`, ...options });
  const create = (id: number) => request(`${server!.url}/plants`, { body: { id, name: `plant ${id}` } });
  const receiver = async (secrets: string[] = []) => {
    const made = new WebhookReceiver(secrets);
    await made.start();
    receivers.push(made);
    return made;
  };
  /** Every stored `secrets` value of the endpoints, by id. */
  const storedSecrets = async (): Promise<Record<string, string>> => {
    if (schema) {
      const { rows } = await schema.admin(`SELECT id, secrets FROM ${schema.name}.webhook_endpoints`);
      return Object.fromEntries(rows.map((row) => [row.id as string, row.secrets as string]));
    }
    const db = new BetterSqlite3(join(dataDir!, 'plants.db'), { readonly: true });
    try {
      const rows = db.prepare('SELECT id, secrets FROM webhook_endpoints').all() as { id: string; secrets: string }[];
      return Object.fromEntries(rows.map((row) => [row.id, row.secrets]));
    } finally {
      db.close();
    }
  };
  /**
   * Writes `secrets` as an endpoint's column, as a release before this one stored it: in clear, and
   * with no record of a reseal (which this build then makes at its first start).
   */
  const storeInClear = async (id: string, secrets: string[]) => {
    const json = JSON.stringify(secrets.map((secret) => ({ secret })));
    if (schema) {
      await schema.admin(`UPDATE ${schema.name}.webhook_endpoints SET secrets = $1 WHERE id = $2`, [json, id]);
      await schema.admin(`DELETE FROM ${schema.name}.webhook_secrets_resealed`);
      return;
    }
    const db = new BetterSqlite3(join(dataDir!, 'plants.db'));
    try {
      db.prepare('UPDATE webhook_endpoints SET secrets = ? WHERE id = ?').run(json, id);
      db.prepare('DELETE FROM webhook_secrets_resealed').run();
    } finally {
      db.close();
    }
  };

  /** Writes a raw `secrets` value into an endpoint's row, as someone with access to the database could. */
  const storeRaw = async (id: string, value: string) => {
    if (schema) {
      await schema.admin(`UPDATE ${schema.name}.webhook_endpoints SET secrets = $1 WHERE id = $2`, [value, id]);
      return;
    }
    const db = new BetterSqlite3(join(dataDir!, 'plants.db'));
    try {
      db.prepare('UPDATE webhook_endpoints SET secrets = ? WHERE id = ?').run(value, id);
    } finally {
      db.close();
    }
  };

  afterEach(async () => {
    for (const made of receivers.splice(0)) await made.stop();
    await server?.destroy();
    await schema?.drop();
    server = undefined;
    schema = undefined;
    dataDir = undefined;
  });

  it('should store no secret in clear (the SQLite file and its WAL, or the PostgreSQL rows), and sign with the same secrets after a restart', async () => {
    const configured = makeSecret();
    const fromConfig = await receiver([configured]);
    const target = await receiver();
    // SQLite outside production: no key given, one is made in DATA_DIR. PostgreSQL: the key is required.
    await start(postgres ? KEY_A : undefined, {
      WEBHOOK_URLS: fromConfig.url,
      WEBHOOK_SECRET: configured,
      WEBHOOK_SECRET_OVERLAP: '1h',
    });
    const created = await admin('/webhooks/endpoints', { method: 'POST', body: { url: target.url } });
    const { id, secret: first } = created.body as { id: string; secret: string };
    const rotated = await admin(`/webhooks/endpoints/${id}/secret/rotate`, { method: 'POST' });
    const { secret: second } = rotated.body as { secret: string };
    target.trust(second);
    target.trust(first);
    expect((await create(1)).status).toBe(200);
    await target.waitFor(() => target.received.length === 1 && fromConfig.received.length === 1);
    expect(target.received[0].verifiedBy).toEqual([0, 1]);
    expect(fromConfig.received[0].verifiedBy).toEqual([0]);

    const stored = await storedSecrets();
    expect(stored[id]).toMatch(/^enc:v1:v2:[0-9a-f]{8}:/);
    // The config endpoint's secret is WEBHOOK_SECRET's: not stored at all.
    expect(Object.values(stored).filter((value) => value !== stored[id])).toEqual(['config:WEBHOOK_SECRET']);
    if (postgres) {
      const text = JSON.stringify(stored);
      for (const secret of [first, second, configured]) {
        expect(text).not.toContain(secret.slice('whsec_'.length));
      }
    } else {
      const key = statSync(join(dataDir!, SECRETS_KEY_FILE));
      expect(key.mode & 0o777).toBe(0o600);
      const files = ['plants.db', 'plants.db-wal', 'plants.db-shm'].map((name) => join(dataDir!, name));
      expect(files.filter(existsSync).length).toBeGreaterThanOrEqual(2);
      for (const file of files.filter(existsSync)) {
        const bytes = readFileSync(file);
        for (const secret of [first, second, configured]) {
          for (const spelling of spellings(secret)) expect(bytes.includes(spelling)).toBe(false);
        }
      }
    }

    // A restart on the same data: the same secrets sign, and the API still serves the current one.
    await restart(postgres ? KEY_A : undefined, {
      WEBHOOK_URLS: fromConfig.url,
      WEBHOOK_SECRET: configured,
      WEBHOOK_SECRET_OVERLAP: '1h',
    });
    expect((await admin(`/webhooks/endpoints/${id}/secret`)).body).toEqual({ secret: second });
    expect((await create(2)).status).toBe(200);
    await target.waitFor(() => target.received.length === 2 && fromConfig.received.length === 2);
    expect(target.received[1].verifiedBy).toEqual([0, 1]);
    expect(fromConfig.received[1].verifiedBy).toEqual([0]);
  });

  it('should encrypt rows stored in clear before, clear a config endpoint stored secret, and re-encrypt under a new first key so the old one can go', async () => {
    const configured = makeSecret();
    const fromConfig = await receiver([configured]);
    const target = await receiver();
    await start(KEY_A, { WEBHOOK_URLS: fromConfig.url, WEBHOOK_SECRET: configured });
    const { id, secret } = (await admin('/webhooks/endpoints', { method: 'POST', body: { url: target.url } })).body as {
      id: string;
      secret: string;
    };
    target.trust(secret);
    const configId = Object.keys(await storedSecrets()).find((key) => key !== id)!;
    await server!.close();
    // As a release before this one left them: both in clear.
    await storeInClear(id, [secret]);
    await storeInClear(configId, [configured]);

    await start(KEY_A, { WEBHOOK_URLS: fromConfig.url, WEBHOOK_SECRET: configured });
    expect(server!.logs).toContain(
      'Encrypted the stored secrets of 1 webhook endpoint(s) with the first WEBHOOK_SECRETS_KEY',
    );
    const sealedUnderA = await storedSecrets();
    expect(sealedUnderA[id]).toMatch(/^enc:v1:v2:/);
    expect(sealedUnderA[id]).not.toContain(secret.slice('whsec_'.length));
    expect(sealedUnderA[configId]).toBe('config:WEBHOOK_SECRET');

    // A new first key: start-up moves the row under it; then the old key can be dropped.
    await restart(`${KEY_B},${KEY_A}`, { WEBHOOK_URLS: fromConfig.url, WEBHOOK_SECRET: configured });
    expect(server!.logs).toContain(
      'Encrypted the stored secrets of 1 webhook endpoint(s) with the first WEBHOOK_SECRETS_KEY',
    );
    const sealedUnderB = await storedSecrets();
    expect(sealedUnderB[id]).toMatch(/^enc:v1:v2:/);
    expect(sealedUnderB[id].split(':')[3]).not.toBe(sealedUnderA[id].split(':')[3]);
    await restart(KEY_B, { WEBHOOK_URLS: fromConfig.url, WEBHOOK_SECRET: configured });
    expect(server!.logs.filter((line) => line.startsWith('Encrypted'))).toEqual([]);
    expect((await admin(`/webhooks/endpoints/${id}/secret`)).body).toEqual({ secret });
    expect((await create(1)).status).toBe(200);
    await target.waitFor(() => target.received.length === 1 && fromConfig.received.length === 1);
    expect(target.received[0].verifiedBy).toEqual([0]);
    expect(fromConfig.received[0].verifiedBy).toEqual([0]);

    // The retired key alone opens nothing: start-up stops, with the line that says what to do.
    await server!.close();
    await expect(start(KEY_A)).rejects.toThrow(
      /^Invalid configuration: WEBHOOK_SECRETS_KEY cannot decrypt the stored webhook endpoint secrets: a secret is encrypted with a key that is not in WEBHOOK_SECRETS_KEY \(endpoint ep_/,
    );
  });

  it("should not open a sealed secret copied into another endpoint's row: that endpoint is held back with one line, the others deliver", async () => {
    const targetA = await receiver();
    const targetB = await receiver();
    await start(KEY_A);
    const a = (await admin('/webhooks/endpoints', { method: 'POST', body: { url: targetA.url } })).body as {
      id: string;
      secret: string;
    };
    const b = (await admin('/webhooks/endpoints', { method: 'POST', body: { url: targetB.url } })).body as {
      id: string;
      secret: string;
    };
    targetA.trust(a.secret);
    targetB.trust(a.secret); // what B would be signed with if A's value opened in its row
    await server!.close();
    // Someone with write access to the database copies A's sealed value into B's row.
    await storeRaw(b.id, (await storedSecrets())[a.id]);

    await start(KEY_A);
    expect(await admin(`/webhooks/endpoints/${b.id}/secret`)).toMatchObject({
      status: 409,
      body: {
        error: 409,
        message: `The stored secret of endpoint ${b.id} cannot be used: a secret does not decrypt with its key for this endpoint: it was altered, or copied from another endpoint`,
      },
    });
    expect((await admin(`/webhooks/endpoints/${a.id}/secret`)).body).toEqual({ secret: a.secret });
    expect((await create(1)).status).toBe(200);
    const line = `Cannot sign for webhook endpoint ${b.id}: `;
    await targetA.waitFor(() => targetA.received.length === 1 && server!.logs.some((log) => log.startsWith(line)));
    expect(targetA.received[0].verifiedBy).toEqual([0]);
    expect((await create(2)).status).toBe(200);
    await targetA.waitFor(() => targetA.received.length === 2);
    expect(targetB.received).toEqual([]);
    const said = server!.logs.filter((log) => log.startsWith(line));
    expect(said).toHaveLength(1);
    expect(said[0]).toContain(
      `${line}a secret does not decrypt with its key for this endpoint: it was altered, or copied from another endpoint. ` +
        'Its deliveries stay pending, unsent and uncounted, until its secret opens, or is rotated with a new one ' +
        '(tried again every minute); other endpoints are not held up',
    );
    const pending = (await admin(`/webhooks/endpoints/${b.id}/deliveries?status=pending`)).body as unknown[];
    expect(pending).toHaveLength(2);
    // A rotation replaces what does not open.
    const rotated = await admin(`/webhooks/endpoints/${b.id}/secret/rotate`, { method: 'POST' });
    expect(rotated.status).toBe(200);
    expect((await admin(`/webhooks/endpoints/${b.id}/secret`)).body).toEqual(rotated.body);
  });

  it("should never serve WEBHOOK_SECRET from an API endpoint's row, nor sign a config endpoint with anything else: each is held back with one line", async () => {
    const configured = makeSecret();
    const healthy = await receiver();
    const api = await receiver([configured]); // what it would be signed with if the operator's place opened in its row
    const declared = await receiver([configured]);
    await start(KEY_A);
    const made = async (url: string) =>
      (await admin('/webhooks/endpoints', { method: 'POST', body: { url } })).body as { id: string; secret: string };
    const a = await made(healthy.url);
    const b = await made(api.url);
    // C belongs to the API first, then WEBHOOK_URLS declares its URL: the same row becomes a config endpoint.
    const c = await made(declared.url);
    healthy.trust(a.secret);
    declared.trust(c.secret); // what it would be signed with if its old sealed value opened there
    const cWhenApi = (await storedSecrets())[c.id];
    const env = { WEBHOOK_URLS: declared.url, WEBHOOK_SECRET: configured };
    await restart(KEY_A, env);
    expect((await storedSecrets())[c.id]).toBe('config:WEBHOOK_SECRET');
    // Someone with write access to the database: the operator's place into B's row, C's old value back into its row.
    await storeRaw(b.id, 'config:WEBHOOK_SECRET');
    await storeRaw(c.id, cWhenApi);

    const served = await admin(`/webhooks/endpoints/${b.id}/secret`);
    expect(served).toMatchObject({
      status: 409,
      body: {
        error: 409,
        message: `The stored secret of endpoint ${b.id} cannot be used: an endpoint of the API holds the place of WEBHOOK_SECRET, which signs only the endpoints declared in WEBHOOK_URLS`,
      },
    });
    expect(served.text).not.toContain(configured.slice('whsec_'.length));
    expect((await create(1)).status).toBe(200);
    const lines = [b.id, c.id].map((id) => `Cannot sign for webhook endpoint ${id}: `);
    const said = (line: string) => server!.logs.filter((log) => log.startsWith(line));
    await healthy.waitFor(() => healthy.received.length === 1 && lines.every((line) => said(line).length > 0));
    expect((await create(2)).status).toBe(200);
    await healthy.waitFor(() => healthy.received.length === 2);
    expect(healthy.received.map((delivery) => delivery.verifiedBy)).toEqual([[0], [0]]);
    expect([api.received, declared.received]).toEqual([[], []]);
    expect(said(lines[0])).toEqual([
      expect.stringContaining(
        `${lines[0]}an endpoint of the API holds the place of WEBHOOK_SECRET, which signs only the endpoints declared in WEBHOOK_URLS. ` +
          'Its deliveries stay pending, unsent and uncounted, until its secret opens, or is rotated with a new one',
      ),
    ]);
    expect(said(lines[1])).toEqual([
      expect.stringContaining(
        `${lines[1]}an endpoint declared in WEBHOOK_URLS holds a stored secret, and it signs with WEBHOOK_SECRET only. ` +
          'Its deliveries stay pending, unsent and uncounted, until the service restarts, which gives it WEBHOOK_SECRET back',
      ),
    ]);
    for (const id of [b.id, c.id]) {
      expect((await admin(`/webhooks/endpoints/${id}/deliveries?status=pending`)).body).toHaveLength(2);
    }

    // A restart gives C its WEBHOOK_SECRET back: what waited goes out, signed with it only.
    await restart(KEY_A, env);
    await declared.waitFor(() => declared.received.length === 2);
    expect(declared.received.map((delivery) => delivery.verifiedBy)).toEqual([[0], [0]]);
    expect(api.received).toEqual([]);
  });
});

describe('webhook endpoint secrets with the key made in DATA_DIR (e2e on SQLite)', () => {
  it('should stop start-up, naming the key file, when that file was lost but the secrets it encrypted were not', async () => {
    const server = await createTestApp({ ADMIN_TOKENS: ADMIN, WEBHOOK_ALLOWED_NETWORKS: '127.0.0.0/8,::1/128' });
    try {
      const created = await request(`${server.url}/webhooks/endpoints`, {
        auth: `Bearer ${ADMIN}`,
        body: { url: 'http://127.0.0.1:9/hook' },
      });
      expect(created.status).toBe(201);
      await server.close();
      rmSync(join(server.dataDir, SECRETS_KEY_FILE));
      await expect(createTestApp({ ADMIN_TOKENS: ADMIN }, server.dataDir)).rejects.toThrow(
        `Invalid configuration: WEBHOOK_SECRETS_KEY (unset: the key file in ${server.dataDir} was used) cannot decrypt the stored webhook endpoint secrets: a secret is encrypted with a key that is not in WEBHOOK_SECRETS_KEY (endpoint ${(created.body as { id: string }).id})`,
      );
    } finally {
      await server.destroy();
    }
  });
});

describeOnEachStore('webhook endpoint secrets, the built service (e2e on %s)', (postgres) => {
  let schema: TestSchema | undefined;
  let service: ServiceProcess | undefined;
  let dir: string;

  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), 'plant-store-secrets-'));
    schema = postgres ? await createTestSchema() : undefined;
  });
  afterEach(async () => {
    await service?.stop('SIGKILL');
    service = undefined;
    await schema?.drop();
    rmSync(dir, { recursive: true, force: true });
  });
  const env = (extra: Record<string, string>) => ({
    DATABASE_URL: schema ? schema.url : `sqlite:${join(dir, 'plants.db')}`,
    DATA_DIR: dir,
    AUTH_TOKENS: 'process-token-0123456789',
    ADMIN_TOKENS: ADMIN,
    WEBHOOK_ALLOWED_NETWORKS: '127.0.0.0/8,::1/128',
    ...extra,
  });

  it('should stop start-up with one line when WEBHOOK_SECRETS_KEY does not decrypt a stored secret, never a 500 later', async () => {
    service = await startService(env({ WEBHOOK_SECRETS_KEY: KEY_A }));
    const created = await request(`${service.url}/webhooks/endpoints`, {
      auth: `Bearer ${ADMIN}`,
      body: { url: 'http://127.0.0.1:9/hook' },
    });
    expect(created.status).toBe(201);
    expect(await service.stop('SIGTERM')).toBe(0);
    service = undefined;

    const { code, stderr } = await runUntilExit(env({ WEBHOOK_SECRETS_KEY: KEY_B }));
    expect(code).toBe(1);
    expect(stderr).toMatch(WRONG_KEY_LINE);
    expect(stderr).not.toContain(KEY_A);
    expect(stderr).not.toContain(KEY_B);
  });

  if (postgres) {
    it('should stop start-up with one line naming WEBHOOK_SECRETS_KEY when PostgreSQL and an admin credential come without it', async () => {
      const { code, stderr } = await runUntilExit(env({ WEBHOOK_SECRETS_KEY: '' }));
      expect(code).toBe(1);
      expect(stderr).toBe(
        'Invalid configuration: WEBHOOK_SECRETS_KEY is required with PostgreSQL when ADMIN_TOKENS or JWTs are configured: it encrypts the webhook endpoint secrets (make one with: openssl rand -base64 32)\n',
      );
    });
  }
});
