import { join } from 'node:path';
import Database from 'better-sqlite3';
import { request } from '../support/http';
import { createTestSchema, describeOnEachStore, TestSchema } from '../support/postgres';
import { eventually } from '../support/eventually';
import { createTestApp, TEST_METRICS_TOKEN, TestApp } from '../support/test-app';
import { DispatchQueue } from '../../src/webhooks/persistence/dispatch-queue';
import { LOOPBACK_NETWORKS, makeSecret, WebhookReceiver } from '../support/webhook-receiver';

describeOnEachStore('the new-plant webhook (e2e on %s, receivers on 127.0.0.1)', (postgres) => {
  const secrets = [makeSecret(), makeSecret()];
  let receiver: WebhookReceiver;
  let second: WebhookReceiver;
  let server: TestApp;
  let schema: TestSchema | undefined;

  /** Starts the service with both receivers subscribed, with short timeouts and retries for the test. */
  const startService = async (env: Record<string, string> = {}) => {
    schema = postgres ? await createTestSchema() : undefined;
    server = await createTestApp({
      ...(schema ? { DATABASE_URL: schema.url } : {}),
      WEBHOOK_URLS: `${receiver.url},${second.url}`,
      WEBHOOK_SECRET: secrets.join(','),
      WEBHOOK_ALLOWED_NETWORKS: LOOPBACK_NETWORKS,
      WEBHOOK_TIMEOUT_MS: '500',
      WEBHOOK_RETRY_SCHEDULE: '100ms,100ms,100ms',
      WEBHOOK_POLL_INTERVAL_MS: '50',
      ...env,
    });
  };

  /** Rows of the outbox, however they are stored. */
  const outbox = async (): Promise<
    { webhook_id: string; url: string; status: string; attempts: number; payload: string }[]
  > => {
    const sql = (prefix: string) =>
      `SELECT d.message_id AS webhook_id, e.url, d.status, d.attempts, m.payload
       FROM ${prefix}webhook_deliveries d JOIN ${prefix}webhook_endpoints e ON e.id = d.endpoint_id
       JOIN ${prefix}webhook_messages m ON m.id = d.message_id ORDER BY d.id`;
    if (schema) return (await schema.admin(sql(`${schema.name}.`))).rows as never;
    const db = new Database(join(server.dataDir, 'plants.db'), { readonly: true });
    try {
      return (db.prepare(sql('')).all() as { attempts: number }[]).map((row) => ({
        ...row,
        attempts: Number(row.attempts),
      })) as never;
    } finally {
      db.close();
    }
  };
  const metric = async (name: string) => {
    const text = (await request(`${server.url}/metrics`, { method: 'GET', auth: `Bearer ${TEST_METRICS_TOKEN}` })).text;
    return Number(new RegExp(`^${name.replace(/[{}"]/g, '\\$&')} (\\S+)$`, 'm').exec(text)?.[1] ?? 0);
  };
  const create = (body: string) => request(`${server.url}/plants`, { body });
  const deliveryTo = async (url: string) => (await outbox()).find((row) => row.url === url);

  beforeEach(async () => {
    receiver = new WebhookReceiver(secrets);
    second = new WebhookReceiver([secrets[1]]);
    await receiver.start();
    await second.start();
  });
  afterEach(async () => {
    // Receivers first: a delivery still hanging ends at once instead of at its timeout.
    await receiver.stop();
    await second.stop();
    await server?.destroy();
    await schema?.drop();
  });

  it('should deliver each new plant once to every subscriber, signed, with the exact NewPlant body', async () => {
    await startService();
    const createdFrom = Math.floor(Date.now() / 1000);
    for (const body of ['{"id":9223372036854775807,"name":"max"}', '{"id":-5,"name":"Fern","tag":"green"}']) {
      expect((await create(body)).status).toBe(200);
    }
    await receiver.waitFor(() => receiver.received.length === 2 && second.received.length === 2);
    for (const got of [...receiver.received, ...second.received]) {
      expect(got.contentType).toBe('application/json');
      expect(got.userAgent).toBe('PlantStore-Webhooks/1.0.0');
      expect(got.webhookId).toMatch(/^msg_[0-9a-f]{32}$/);
      // Signed when sent: after the creates, and no later than its arrival (seconds, as the header).
      expect(Number(got.timestamp)).toBeGreaterThanOrEqual(createdFrom);
      expect(Number(got.timestamp)).toBeLessThanOrEqual(Math.floor(got.receivedAt / 1000));
      expect(got.signature.split(' ')).toHaveLength(2);
    }
    // Every secret verifies on its own (rotation), and the second receiver knows only one of them.
    expect(receiver.received.map((got) => got.verifiedBy)).toEqual([
      [0, 1],
      [0, 1],
    ]);
    expect(second.received.map((got) => got.verifiedBy)).toEqual([[0], [0]]);
    expect(receiver.received.map((got) => got.body).sort()).toEqual([
      '{"id":-5,"name":"Fern","tag":"green"}',
      '{"id":9223372036854775807,"name":"max"}',
    ]);
    // One webhook-id per event, the same for every endpoint.
    expect(new Set([...receiver.ids(), ...second.ids()]).size).toBe(2);
    expect(receiver.ids()).toEqual(second.ids());
  });

  it('should write no event for a replay, a conflict, an invalid body or a delete', async () => {
    await startService();
    await create('{"id":1,"name":"Aloe"}');
    expect((await create('{"id":1,"name":"Aloe"}')).status).toBe(200);
    expect((await create('{"id":1,"name":"Other"}')).status).toBe(409);
    expect((await create('{"id":"x","name":"Other"}')).status).toBe(400);
    expect((await request(`${server.url}/plants/1`, { method: 'DELETE' })).status).toBe(204);
    expect((await request(`${server.url}/plants/1`, { method: 'DELETE' })).status).toBe(404);
    expect((await outbox()).map((row) => [row.url, row.payload])).toEqual([
      [receiver.url, '{"id":1,"name":"Aloe"}'],
      [second.url, '{"id":1,"name":"Aloe"}'],
    ]);
    // A create after the delete is a new plant, so a new event, under new webhook-ids.
    await create('{"id":1,"name":"Aloe again"}');
    await receiver.waitFor(() => receiver.received.length === 2 && second.received.length === 2);
    expect(receiver.received.map((got) => got.body)).toEqual([
      '{"id":1,"name":"Aloe"}',
      '{"id":1,"name":"Aloe again"}',
    ]);
    expect(receiver.ids().size).toBe(2);
  });

  it('should retry failures (500, a timeout, a redirect) with the same webhook-id until a 2xx', async () => {
    const answers = [500, 500, 'hang', 302] as const;
    receiver.answerWith((got) => answers[got.attempt - 1] ?? 200);
    await startService({ WEBHOOK_RETRY_SCHEDULE: '100ms,100ms,100ms,100ms,100ms' });
    await create('{"id":42,"name":"Persistent"}');
    await eventually(async () => (await deliveryTo(receiver.url))?.status === 'succeeded');
    expect(receiver.received.map((got) => got.attempt)).toEqual([1, 2, 3, 4, 5]);
    expect(receiver.ids().size).toBe(1);
    expect(receiver.received.every((got) => got.verifiedBy.length === 2)).toBe(true);
    expect(receiver.received.every((got) => got.body === '{"id":42,"name":"Persistent"}')).toBe(true);
    // Signed afresh on each attempt: timestamps move, so signatures differ.
    expect(new Set(receiver.received.map((got) => got.signature)).size).toBeGreaterThan(1);
    expect(await deliveryTo(receiver.url)).toMatchObject({ status: 'succeeded', attempts: 5 });
    expect(second.received).toHaveLength(1);
    expect(await metric('plant_store_webhook_attempts_total{outcome="5xx"}')).toBe(2);
    expect(await metric('plant_store_webhook_attempts_total{outcome="timeout"}')).toBe(1);
    expect(await metric('plant_store_webhook_attempts_total{outcome="3xx"}')).toBe(1);
    expect(await metric('plant_store_webhook_attempts_total{outcome="2xx"}')).toBe(2);
    expect(await metric('plant_store_webhook_delivery_latency_seconds_count')).toBe(2);
  });

  it('should stop at once on 410 Gone, and mark the delivery failed', async () => {
    receiver.answerWith(() => 410);
    await startService();
    await create('{"id":7,"name":"Unwanted"}');
    await eventually(async () => (await deliveryTo(receiver.url))?.status === 'failed');
    await new Promise((resolve) => setTimeout(resolve, 600)); // longer than the whole retry schedule
    expect(receiver.received).toHaveLength(1);
    expect(await deliveryTo(receiver.url)).toMatchObject({ status: 'failed', attempts: 1 });
    expect(await metric('plant_store_webhook_attempts_total{outcome="gone"}')).toBe(1);
    expect(await metric('plant_store_webhook_deliveries_failed_total')).toBe(1);
  });

  it('should mark a delivery failed when the schedule is used up, count it and log it with its webhook-id', async () => {
    receiver.answerWith(() => 503);
    await startService({ WEBHOOK_RETRY_SCHEDULE: '50ms,50ms' });
    await second.stop(); // its connections are refused
    await create('{"id":8,"name":"Never delivered"}');
    await eventually(async () => (await outbox()).every((row) => row.status === 'failed'));
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(receiver.received).toHaveLength(3);
    expect(await outbox()).toEqual([
      expect.objectContaining({ url: receiver.url, status: 'failed', attempts: 3 }),
      expect.objectContaining({ url: second.url, status: 'failed', attempts: 3 }),
    ]);
    expect(await metric('plant_store_webhook_deliveries_failed_total')).toBe(2);
    expect(await metric('plant_store_webhook_attempts_total{outcome="5xx"}')).toBe(3);
    expect(await metric('plant_store_webhook_attempts_total{outcome="network"}')).toBe(3);
    const { webhookId } = receiver.received[0];
    expect(server.logs).toContainEqual(
      expect.stringMatching(
        new RegExp(
          `Delivery ${webhookId} to ep_\\w+ \\(127.0.0.1:${receiver.port}\\) failed for good: HTTP 503 on the last of 3 attempts`,
        ),
      ),
    );
    expect(server.logs).toContainEqual(
      expect.stringMatching(
        new RegExp(
          `Delivery ${webhookId} to ep_\\w+ \\(127.0.0.1:${receiver.port}\\) failed \\(attempt 1: HTTP 503\\); retrying in 0 s`,
        ),
      ),
    );
    // Neither the path of a subscriber's URL (it may hold a token) nor a secret is ever logged.
    expect(server.logs.join('\n')).not.toContain('/hooks/plants');
    for (const secret of secrets) expect(server.logs.join('\n')).not.toContain(secret.slice(6, 20));
  });

  it('should prune delivered and failed deliveries once they are older than WEBHOOK_RETENTION', async () => {
    second.answerWith(() => 410);
    await startService({ WEBHOOK_RETENTION: '1h' });
    await create('{"id":11,"name":"Kept a while"}');
    await eventually(async () => (await outbox()).every((row) => row.status !== 'pending'));
    await server.close();
    // The same store again (the dispatcher prunes at start, then every minute), keeping finished rows 1 ms.
    const again = await createTestApp(
      {
        ...(schema ? { DATABASE_URL: schema.url } : {}),
        WEBHOOK_URLS: `${receiver.url},${second.url}`,
        WEBHOOK_SECRET: secrets.join(','),
        WEBHOOK_ALLOWED_NETWORKS: LOOPBACK_NETWORKS,
        WEBHOOK_RETENTION: '1ms',
      },
      server.dataDir,
    );
    server = again;
    await eventually(async () => (await outbox()).length === 0);
    expect(receiver.received).toHaveLength(1);
  });

  it('should report the backlog and the age of its oldest delivery while a subscriber hangs', async () => {
    receiver.answerWith(() => 'hang');
    await startService({ WEBHOOK_TIMEOUT_MS: '60000' });
    await create('{"id":9,"name":"Waiting"}');
    await receiver.waitFor(() => receiver.received.length === 1);
    await eventually(async () => (await deliveryTo(second.url))?.status === 'succeeded');
    expect(await metric('plant_store_webhook_backlog')).toBe(1);
    expect(await metric('plant_store_webhook_oldest_pending_age_seconds')).toBeGreaterThan(0);
    // A hanging subscriber holds no transaction: creates, reads and readiness go on.
    expect((await create('{"id":10,"name":"Unhindered"}')).status).toBe(200);
    expect((await request(`${server.url}/health/ready`, { method: 'GET' })).status).toBe(200);
  });

  it('should read the outbox once for a flood of scrapes, not once per scrape', async () => {
    await startService();
    const backlog = jest.spyOn(server.app.get(DispatchQueue), 'backlog');
    await new Promise((resolve) => setTimeout(resolve, 1000)); // past what an earlier scrape left
    const scrapes = await Promise.all(Array.from({ length: 30 }, () => metric('plant_store_webhook_backlog')));
    expect(scrapes).toEqual(Array.from({ length: 30 }, () => 0));
    expect(backlog.mock.calls.length).toBeLessThanOrEqual(2);
  });
});
