import { sql } from 'kysely';
import { PLANT_CREATED, PLANT_DELETED } from '../src/plants/plant-events';
import { OutboxWriter } from '../src/webhooks/outbox.writer';
import { describeOnEachStore } from './support/postgres';
import { useWebhookStores } from './support/webhook-stores';

/**
 * The outbox's write (`OutboxStore`), written once and run on each store through the `OutboxWriter`
 * that implements a feature's port, awaited in a transaction as a feature's write does: one message
 * per event, one delivery per enabled endpoint, nothing without one, the body as sent, and the wake
 * after each commit that wrote.
 */
describeOnEachStore('the webhook outbox store (contract, on %s)', (postgres) => {
  const { stores, commit, endpoint, inTransaction } = useWebhookStores(postgres);

  /** Rows in one of the outbox's tables. */
  const count = async (table: 'webhook_messages' | 'webhook_deliveries') => {
    const query = sql<{ n: number | bigint | string }>`SELECT count(*) AS n FROM ${sql.table(table)}`;
    return Number((await stores.database.execute('count', query.compile(stores.database.kysely))).rows[0].n);
  };

  it('should write nothing while no endpoint is enabled', async () => {
    await endpoint('http://127.0.0.1:1/off', true);
    await commit('Aloe');
    let written: number | undefined;
    await inTransaction(async (tx) => (written = await stores.outbox.write(tx, () => [])));
    expect(written).toBe(0);
    expect(await count('webhook_messages')).toBe(0);
    expect(await stores.queue.backlog()).toEqual({ pending: 0 });
  });

  it('should write one message per event, with one delivery per enabled endpoint under the same webhook-id', async () => {
    const a = await endpoint('http://127.0.0.1:1/a');
    const b = await endpoint('http://127.0.0.1:1/b');
    await endpoint('http://127.0.0.1:1/off', true);
    await commit('Aloe');
    const claimed = await stores.queue.claim(100, 60_000, 8);
    expect(claimed.map((d) => d.endpointId).sort()).toEqual([a, b].sort());
    expect(new Set(claimed.map((d) => d.webhookId)).size).toBe(1);
    expect(claimed[0].payload).toBe('{"id":9007199254740993,"name":"Aloe"}');
    expect(claimed[0].secrets).toHaveLength(1);
  });

  it('should write a batch of events in one transaction, each exact, counting the deliveries', async () => {
    await endpoint('http://127.0.0.1:1/a');
    await endpoint('http://127.0.0.1:1/b');
    await commit('a', 'b', 'c');
    expect(await stores.queue.backlog()).toMatchObject({ pending: 6 });
    const payloads = (await stores.queue.claim(100, 60_000, 8)).map((d) => d.payload).sort();
    expect([...new Set(payloads)]).toEqual([
      '{"id":9007199254740993,"name":"a"}',
      '{"id":9007199254740994,"name":"b"}',
      '{"id":9007199254740995,"name":"c"}',
    ]);
  });

  it('should write an event only for the endpoints subscribed to its type', async () => {
    await endpoint('http://127.0.0.1:1/created'); // plant.created, the default
    const deletes = await endpoint('http://127.0.0.1:1/deleted', false, ['plant.deleted']);
    const writer = new OutboxWriter(stores.outbox, () => undefined, PLANT_DELETED);
    await inTransaction((tx) => writer.publish(tx, [{ id: -(2n ** 63n), name: 'Fern', tag: 'shade' }]));
    const claimed = await stores.queue.claim(100, 60_000, 8);
    expect(claimed.map((d) => d.endpointId)).toEqual([deletes]);
    expect(await count('webhook_messages')).toBe(1);
  });

  it('should send any type but plant.created in the envelope, its timestamp the store’s clock at the write (not the transaction’s start) and the delivery’s createdAt', async () => {
    await endpoint('http://127.0.0.1:1/deleted', false, ['plant.deleted']);
    const writer = new OutboxWriter(stores.outbox, () => undefined, PLANT_DELETED);
    let beforeWrite = 0;
    await inTransaction(async (tx) => {
      await tx.execute(sql`SELECT 1`.compile(stores.database.kysely)); // begun
      await new Promise((resolve) => setTimeout(resolve, 50));
      beforeWrite = Date.now();
      await writer.publish(tx, [{ id: 2n ** 63n - 1n, name: 'Fern' }]);
    });
    const [delivery] = await stores.queue.claim(100, 60_000, 8);
    const timestamp = new Date(delivery.createdAtMs).toISOString();
    expect(delivery.payload).toBe(
      `{"type":"plant.deleted","timestamp":"${timestamp}","data":{"id":9223372036854775807,"name":"Fern"}}`,
    );
    expect(delivery.createdAtMs).toBeGreaterThanOrEqual(beforeWrite);
    const [logged] = await stores.log.list(delivery.endpointId, { limit: 10 });
    expect(logged).toMatchObject({ payload: delivery.payload, createdAtMs: delivery.createdAtMs });
  });

  it('should wake the dispatcher once each transaction that wrote deliveries has committed, never before, nor for one that rolled back', async () => {
    const wakes: string[] = [];
    const writer = new OutboxWriter(stores.outbox, () => void wakes.push('wake'), PLANT_CREATED);
    const publish = (id: bigint) =>
      inTransaction(async (tx) => {
        await writer.publish(tx, [{ id, name: 'a' }]);
        wakes.push(`published ${id}`);
      });
    await Promise.all([publish(1n), publish(2n)]); // no endpoint: nothing written, nothing to wake for
    expect(wakes.sort()).toEqual(['published 1', 'published 2']);
    wakes.length = 0;

    await endpoint('http://127.0.0.1:1/a');
    await Promise.all([publish(3n), publish(4n)]); // on PostgreSQL both open at once
    expect(wakes.filter((wake) => wake === 'wake')).toHaveLength(2);
    expect(wakes.indexOf('published 3')).toBeLessThan(wakes.indexOf('wake'));
    wakes.length = 0;

    const failure = new Error('the change failed');
    await expect(
      inTransaction(async (tx) => {
        await writer.publish(tx, [{ id: 5n, name: 'rolled back' }]);
        throw failure;
      }),
    ).rejects.toBe(failure);
    expect(wakes).toEqual([]);
    expect(await stores.queue.backlog()).toMatchObject({ pending: 2 });
  });

  it('should write nothing when the transaction rolls back, or a statement of it fails', async () => {
    await endpoint('http://127.0.0.1:1/a');
    const writer = new OutboxWriter(stores.outbox, () => undefined, PLANT_CREATED);
    const failure = new Error('the plant failed');
    await expect(
      inTransaction(async (tx) => {
        await writer.publish(tx, [{ id: 1n, name: 'a' }]);
        throw failure;
      }),
    ).rejects.toBe(failure);
    await expect(
      inTransaction(async (tx) => {
        await writer.publish(tx, [{ id: 2n, name: 'b' }]);
        await tx.execute(sql`SELECT id FROM no_such_table`.compile(stores.database.kysely));
      }),
    ).rejects.toThrow(/failed to write the outbox$/);
    expect(await count('webhook_messages')).toBe(0);
    expect(await stores.queue.backlog()).toEqual({ pending: 0 });
  });
});
