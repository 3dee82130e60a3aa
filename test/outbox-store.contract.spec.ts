import { OutboxWriter } from '../src/webhooks/outbox.writer';
import { PostgresDatabase, PostgresTransaction } from '../src/database/postgres-database';
import { SqliteDatabase, SqliteTransaction } from '../src/database/sqlite-database';
import { describeOnEachStore } from './support/postgres';
import { useWebhookStores } from './support/webhook-stores';

/**
 * The outbox's write (`OutboxStore`), written once and run on each store, through the plants'
 * transaction port and the `OutboxWriter` that calls it: one message per event, one delivery per
 * enabled endpoint, nothing without one, and the wake after each commit that wrote.
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
      const connection = database.connection;
      const written = connection
        .transaction(() => stores.outbox.write(new SqliteTransaction(connection), messages))
        .immediate();
      expect(written).toBe(0); // at once, inside the synchronous transaction
      expect(messages).not.toHaveBeenCalled();
    } else {
      const pg = database as PostgresDatabase;
      expect(
        await pg.transaction(
          (client) => stores.outbox.write(new PostgresTransaction(pg, client), messages) as Promise<number>,
        ),
      ).toBe(0);
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
    const waking = new OutboxWriter(stores.outbox, () => void (wakes += 1));
    const plants = (name: string) => [{ id: 9007199254740993n, name }];
    /** Two transactions that both write before either reports its commit (on PostgreSQL both are open at once). */
    const interleaved = async () => {
      const { database } = stores;
      if (database instanceof SqliteDatabase) {
        const connection = database.connection;
        const [first, second] = [new SqliteTransaction(connection), new SqliteTransaction(connection)];
        connection.transaction(() => void waking.created(first, plants('a'))).immediate();
        connection.transaction(() => void waking.created(second, plants('b'))).immediate();
        waking.committed(first);
        waking.committed(second);
        return;
      }
      const pg = database as PostgresDatabase;
      let secondWrote!: () => void;
      const written = new Promise<void>((resolve) => (secondWrote = resolve));
      let first!: PostgresTransaction;
      const one = pg.transaction(async (client) => {
        first = new PostgresTransaction(pg, client);
        await waking.created(first, plants('a'));
        await written; // commits after the second transaction wrote
      });
      await pg
        .transaction(async (client) => {
          const second = new PostgresTransaction(pg, client);
          await waking.created(second, plants('b'));
          secondWrote();
          await one;
          waking.committed(first);
          return second;
        })
        .then((second) => waking.committed(second));
    };
    await interleaved(); // no endpoint: nothing written, nothing to wake for
    expect(wakes).toBe(0);
    await endpoint('http://127.0.0.1:1/a');
    await interleaved();
    expect(wakes).toBe(2);
    expect(await stores.queue.backlog()).toMatchObject({ pending: 2 });
  });

  it('should write nothing when the plants transaction rolls back', async () => {
    await endpoint('http://127.0.0.1:1/a');
    const writer = new OutboxWriter(stores.outbox, () => undefined);
    const { database } = stores;
    const failure = new Error('the plant failed');
    if (database instanceof SqliteDatabase) {
      const connection = database.connection;
      expect(() =>
        connection
          .transaction(() => {
            void writer.created(new SqliteTransaction(connection), [{ id: 1n, name: 'a' }]);
            throw failure;
          })
          .immediate(),
      ).toThrow(failure);
    } else {
      const pg = database as PostgresDatabase;
      await expect(
        pg.transaction(async (client) => {
          await writer.created(new PostgresTransaction(pg, client), [{ id: 1n, name: 'a' }]);
          throw failure;
        }),
      ).rejects.toThrow(failure);
    }
    expect(await stores.queue.backlog()).toEqual({ pending: 0 });
  });
});
