import { sql } from 'kysely';
import { Client } from 'pg';
import { PostgresDatabase } from '../src/database/postgres-database';
import { EndpointIds } from '../src/webhooks/endpoints/endpoint-ids';
import { newSecret } from '../src/webhooks/endpoints/endpoints.service';
import { newMessage } from '../src/webhooks/outbox.writer';
import { EndpointDisabledError } from '../src/webhooks/persistence/delivery-log';
import { WEBHOOK_TEST } from '../src/webhooks/webhook-test-event';
import { webhookBody } from '../src/webhooks/webhook-body';
import { createTestSchema, describeOnEachStore, describePostgres, TestSchema } from './support/postgres';
import { useWebhookStores, WEBHOOK_TEST_MIGRATIONS, webhookStores, WebhookStores } from './support/webhook-stores';

const testOf = (endpointId: string) => newMessage(WEBHOOK_TEST, { endpointId });

/**
 * A message for one endpoint alone (`DeliveryLog.sendTo`, the test send, through
 * `OutboxStore.writeTo`), written once and run on each store: whatever the endpoint subscribes to,
 * only while it is there and enabled, committed with its transaction, and shown as the log shows it.
 */
describeOnEachStore('a message sent to one endpoint (contract, on %s)', (postgres) => {
  const { stores, endpoint, inTransaction } = useWebhookStores(postgres);

  /** Every delivery: `[endpoint id, event type]`. */
  const deliveries = async () => {
    const query = sql<{ endpoint_id: string; event_type: string }>`
      SELECT d.endpoint_id, m.event_type FROM webhook_deliveries d JOIN webhook_messages m ON m.id = d.message_id
      ORDER BY d.id`;
    const { rows } = await stores.database.execute('list', query.compile(stores.database.kysely));
    return rows.map((row) => [row.endpoint_id, row.event_type]);
  };
  const messages = async () => {
    const query = sql<{ n: number | bigint | string }>`SELECT count(*) AS n FROM webhook_messages`;
    return Number((await stores.database.execute('count', query.compile(stores.database.kysely))).rows[0].n);
  };

  it('should write it for that endpoint alone, whatever its event types, and show its delivery pending, in the envelope', async () => {
    const target = await endpoint('http://127.0.0.1:1/target', false, ['plant.deleted']);
    const other = await endpoint('http://127.0.0.1:1/other', false, ['plant.deleted']);
    const message = testOf(target);

    const delivery = await stores.log.sendTo(target, message);

    expect(delivery).toEqual({
      seq: expect.any(String),
      id: message.id,
      endpointId: target,
      eventType: 'webhook.test',
      payload: webhookBody({
        eventType: 'webhook.test',
        data: `{"endpointId":"${target}"}`,
        enveloped: true,
        createdAtMs: delivery!.createdAtMs,
      }),
      status: 'pending',
      attempts: 0,
      createdAtMs: expect.any(Number),
      nextAttemptAtMs: expect.any(Number),
    });
    expect(await deliveries()).toEqual([[target, 'webhook.test']]);
    expect(await stores.log.list(other, { limit: 10 })).toEqual([]);
    // The dispatcher sends it as it sends any delivery: to the endpoint's URL, with its secrets.
    const [claimed] = await stores.queue.claim(10, 60_000, 8);
    expect(claimed).toMatchObject({ webhookId: message.id, endpointId: target, url: 'http://127.0.0.1:1/target' });
    expect(claimed.payload).toBe(delivery!.payload);
    expect(claimed.secrets).toHaveLength(1);
  });

  it('should write nothing for a disabled endpoint (EndpointDisabledError) nor for one that is not there (undefined)', async () => {
    const disabled = await endpoint('http://127.0.0.1:1/off', true);
    await expect(stores.log.sendTo(disabled, testOf(disabled))).rejects.toThrow(new EndpointDisabledError(disabled));
    await expect(stores.log.sendTo('ep_0000000000000000000000000000', testOf('ep_0'))).resolves.toBeUndefined();
    expect(await messages()).toBe(0);
  });

  it('should answer what it found, and leave nothing when its transaction rolls back', async () => {
    const enabled = await endpoint('http://127.0.0.1:1/on');
    const disabled = await endpoint('http://127.0.0.1:1/off', true);
    const found: string[] = [];
    await inTransaction(async (tx) => {
      found.push(await stores.outbox.writeTo(tx, disabled, testOf(disabled)));
      found.push(await stores.outbox.writeTo(tx, 'ep_0000000000000000000000000000', testOf('ep_0')));
    });
    expect(found).toEqual(['disabled', 'none']);
    await expect(
      inTransaction(async (tx) => {
        found.push(await stores.outbox.writeTo(tx, enabled, testOf(enabled)));
        throw new Error('the change failed');
      }),
    ).rejects.toThrow('the change failed');
    expect(found).toEqual(['disabled', 'none', 'enabled']);
    expect(await messages()).toBe(0);
  });
});

/**
 * The write for one endpoint meets a change of that endpoint on another connection: it is one
 * statement that reads the endpoint's row locked where it writes, so each outcome is one of a serial
 * order, and never a delivery pending beside a disable or a delete that did not see it.
 */
describePostgres('a message sent to one endpoint, against a concurrent change of it (PostgreSQL)', () => {
  const ids = new EndpointIds();
  let schema: TestSchema;
  let database: PostgresDatabase;
  let stores: WebhookStores;
  let blocker: Client;

  beforeEach(async () => {
    schema = await createTestSchema();
    database = new PostgresDatabase(
      { url: schema.url, poolMax: 4, connectAttempts: 1, queryTimeoutMs: 30_000 },
      WEBHOOK_TEST_MIGRATIONS,
    );
    await database.onModuleInit();
    stores = webhookStores(database);
    blocker = new Client({ connectionString: schema.url });
    await blocker.connect();
  });
  afterEach(async () => {
    await blocker.end();
    await database.onApplicationShutdown();
    await schema.drop();
  });

  const endpoint = async () =>
    (
      await stores.endpoints.create(
        { id: ids.next(), url: 'http://127.0.0.1:1/a', description: '', disabled: false, secret: newSecret() },
        100,
      )
    ).id;
  /** A count over this test's schema, or its connections (`application_name`). */
  const count = async (query: string, params: unknown[] = []) =>
    (await schema.admin(query, params)).rows[0].n as number;
  const deliveries = () => count(`SELECT count(*)::int AS n FROM ${schema.name}.webhook_deliveries`);
  const connections = (where: string) =>
    count(`SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name = $1 AND ${where}`, [schema.name]);
  /** Whether a connection of this test waits for a lock, or `settled` (then it never will). */
  const waitingOrSettled = (settled: () => boolean) => async () =>
    settled() || (await connections(`wait_event_type = 'Lock'`)) > 0;
  /** Whether a transaction of this test is open, between two statements. */
  const heldOpen = async () => (await connections(`state = 'idle in transaction'`)) > 0;
  const until = async (condition: () => Promise<boolean>) => {
    while (!(await condition())) await new Promise((resolve) => setTimeout(resolve, 20));
  };
  const track = <T>(promise: Promise<T>) => {
    const state = { settled: false, promise };
    void promise.then(
      () => (state.settled = true),
      () => (state.settled = true),
    );
    return state;
  };

  it('should wait for a disable in flight, then find the endpoint disabled and write nothing (409)', async () => {
    const endpointId = await endpoint();
    await blocker.query('BEGIN');
    await blocker.query('UPDATE webhook_endpoints SET disabled = true WHERE id = $1', [endpointId]);
    const sent = track(stores.log.sendTo(endpointId, testOf(endpointId)));
    await until(waitingOrSettled(() => sent.settled));
    expect(sent.settled).toBe(false);
    await blocker.query('COMMIT');
    await expect(sent.promise).rejects.toThrow(EndpointDisabledError);
    expect(await deliveries()).toBe(0);
  });

  it('should wait for a delete in flight, then find no endpoint and write nothing (404)', async () => {
    const endpointId = await endpoint();
    await blocker.query('BEGIN');
    await blocker.query('LOCK TABLE webhook_messages IN SHARE MODE');
    await blocker.query('DELETE FROM webhook_endpoints WHERE id = $1', [endpointId]);
    const sent = track(stores.log.sendTo(endpointId, testOf(endpointId)));
    await until(waitingOrSettled(() => sent.settled));
    expect(sent.settled).toBe(false);
    await blocker.query('COMMIT');
    await expect(sent.promise).resolves.toBeUndefined();
    expect(await deliveries()).toBe(0);
  });

  it('should hold a delete back until it commits: the delete then takes its delivery away', async () => {
    const endpointId = await endpoint();
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const written = database.transaction('hold a write', async (tx) => {
      const found = await stores.outbox.writeTo(tx, endpointId, testOf(endpointId));
      await gate;
      return found;
    });
    await until(heldOpen);
    const deleted = track(stores.endpoints.delete(endpointId));
    await until(waitingOrSettled(() => deleted.settled));
    expect(deleted.settled).toBe(false);
    release();
    await expect(written).resolves.toBe('enabled');
    await expect(deleted.promise).resolves.toBe(true);
    expect(await deliveries()).toBe(0);
  });
});
