import { PLANT_CREATED } from '../src/plants/plant-events';
import { OutboxWriter } from '../src/webhooks/outbox.writer';
import { sql } from 'kysely';
import { PostgresDatabase } from '../src/database/postgres-database';
import { SqliteDatabase } from '../src/database/sqlite-database';
import { StorageError } from '../src/database/storage.error';
import { SqlPlantsRepository } from '../src/plants/persistence/sql-plants.repository';
import { describeOnEachStore } from './support/postgres';
import { useWebhookStores } from './support/webhook-stores';

/** Rows in one of the outbox's tables (PostgreSQL). */
const count = async (database: PostgresDatabase, table: 'webhook_messages' | 'webhook_deliveries') =>
  Number(
    (
      await database.execute(
        'count',
        sql<{ n: string }>`SELECT count(*) AS n FROM ${sql.table(table)}`.compile(database.kysely),
      )
    ).rows[0].n,
  );

/**
 * The outbox's write (`OutboxStore`), written once and run on each store, through the plants' port
 * and the `OutboxWriter` that implements it (SQLite: in the group commit's transaction; PostgreSQL:
 * in the plants' insert statement): one message per event, one delivery per enabled endpoint,
 * nothing without one, and the wake after each commit that wrote.
 */
describeOnEachStore('the webhook outbox store (contract, on %s)', (postgres) => {
  const { stores, commit, endpoint } = useWebhookStores(postgres);

  it('should record nothing while no endpoint is enabled', async () => {
    await endpoint('http://127.0.0.1:1/off', true);
    await commit('Aloe');
    expect(await stores.queue.backlog()).toEqual({ pending: 0 });
    const messages = jest.fn(() => []);
    const { database } = stores;
    if (database instanceof SqliteDatabase) {
      let written: unknown;
      await database.transaction('write the outbox', (tx) => void (written = stores.outbox.write(tx, messages)));
      expect(written).toBe(0); // at once, inside the synchronous transaction
      expect(messages).not.toHaveBeenCalled();
    } else {
      // Not even the messages: the statement's own read found no enabled endpoint.
      expect(await count(database as PostgresDatabase, 'webhook_messages')).toBe(0);
    }
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

  it('should wake the dispatcher after each commit that wrote deliveries, also when two transactions interleave', async () => {
    let wakes = 0;
    let interleavedIds = 1n;
    const waking = new OutboxWriter(stores.outbox, () => void (wakes += 1), PLANT_CREATED);
    const plants = (name: string) => [{ id: 9007199254740993n, name }];
    /** Two transactions that both write before either reports its commit (on PostgreSQL both are open at once). */
    const interleaved = async () => {
      const { database } = stores;
      if (database instanceof SqliteDatabase) {
        const written = (name: string) =>
          database.transaction('write the outbox', (tx) => {
            void waking.created(tx, plants(name));
            return tx;
          });
        const [first, second] = await Promise.all([written('a'), written('b')]);
        waking.committed(first);
        waking.committed(second);
        return;
      }
      // PostgreSQL: two statements (two batches, one turn apart), each waking on its own.
      const repository = new SqlPlantsRepository(database, waking);
      const next = interleavedIds++;
      await Promise.all([
        repository.create({ id: 2n * next, name: 'a' }),
        new Promise(setImmediate).then(() => repository.create({ id: 2n * next + 1n, name: 'b' })),
      ]);
      await repository.onModuleDestroy();
    };
    await interleaved(); // no endpoint: nothing written, nothing to wake for
    expect(wakes).toBe(0);
    await endpoint('http://127.0.0.1:1/a');
    await interleaved();
    expect(wakes).toBe(2);
    expect(await stores.queue.backlog()).toMatchObject({ pending: 2 });
  });

  it('should write nothing when the plants transaction rolls back (or the statement fails)', async () => {
    await endpoint('http://127.0.0.1:1/a');
    const writer = new OutboxWriter(stores.outbox, () => undefined, PLANT_CREATED);
    const { database } = stores;
    const failure = new Error('the plant failed');
    if (database instanceof SqliteDatabase) {
      await expect(
        database.transaction('write the outbox', (tx) => {
          void writer.created(tx, [{ id: 1n, name: 'a' }]);
          throw failure;
        }),
      ).rejects.toBe(failure);
    } else {
      // PostgreSQL refuses NUL in text: the one statement, outbox included, stores nothing.
      const repository = new SqlPlantsRepository(database, writer);
      await expect(repository.create({ id: 1n, name: 'nul \u0000 inside' })).rejects.toThrow(StorageError);
      await repository.onModuleDestroy();
      expect(await count(database as PostgresDatabase, 'webhook_messages')).toBe(0);
    }
    expect(await stores.queue.backlog()).toEqual({ pending: 0 });
  });
});
