import { CompiledQuery } from 'kysely';
import { Client } from 'pg';
import { PostgresDatabase } from '../src/database/postgres-database';
import { SqlPlantsRepository } from '../src/plants/persistence/sql-plants.repository';
import { attemptResult } from '../src/webhooks/dispatch-policy';
import { EndpointIds } from '../src/webhooks/endpoints/endpoint-ids';
import { RECOVER_BATCH_SIZE, recoverInBatches } from '../src/webhooks/endpoints/recover-in-batches';
import { newSecret } from '../src/webhooks/endpoints/endpoints.service';
import { PLANT_CREATED, PLANT_DELETED } from '../src/plants/plant-events';
import { OutboxWriter } from '../src/webhooks/outbox.writer';
import { createTestSchema, describePostgres, TestSchema } from './support/postgres';
import { WEBHOOK_TEST_MIGRATIONS, webhookStores, WebhookStores } from './support/webhook-stores';

const ids = new EndpointIds();

/** One instance of the service as far as creates and endpoints go: its own pool, repository and stores. */
interface Instance extends WebhookStores {
  readonly database: PostgresDatabase;
  readonly plants: SqlPlantsRepository;
  /** How many times its outbox woke the dispatcher. */
  wakes: number;
  close(): Promise<void>;
}

async function instance(url: string): Promise<Instance> {
  const database = new PostgresDatabase(
    { url, poolMax: 4, connectAttempts: 1, queryTimeoutMs: 30_000 },
    WEBHOOK_TEST_MIGRATIONS,
  );
  await database.onModuleInit();
  const stores = webhookStores(database);
  const self: Instance = {
    ...stores,
    database,
    plants: new SqlPlantsRepository(
      database,
      new OutboxWriter(stores.outbox, () => self.wakes++, PLANT_CREATED),
      new OutboxWriter(stores.outbox, () => self.wakes++, PLANT_DELETED),
    ),
    wakes: 0,
    close: async () => {
      await self.plants.onModuleDestroy();
      await database.onApplicationShutdown();
    },
  };
  return self;
}

/**
 * Waits until `condition` holds: a state another connection reaches (a lock wait), never a fixed
 * time. Gives up before the test's timeout, so a state never reached fails the test by its name.
 */
async function until(condition: () => Promise<boolean>, what = condition.name): Promise<void> {
  const giveUp = Date.now() + 20_000;
  while (!(await condition())) {
    if (Date.now() > giveUp) throw new Error(`never reached: ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/**
 * On PostgreSQL a group commit of creates is one transaction: the insert, then the outbox's one
 * statement (the webhooks' CTEs), then COMMIT. These are the rules that keep it exact across instances:
 * the outbox's statement reads the enabled endpoints on its own snapshot, and a change to which
 * endpoints get events waits for the transactions that wrote there and holds back new writes
 * (`OUTBOX_WRITES_DRAINED`).
 */
describePostgres('the outbox in the plants transactions, across instances (PostgreSQL)', () => {
  let schema: TestSchema;
  let a: Instance;
  let b: Instance;
  let blocker: Client;

  beforeEach(async () => {
    schema = await createTestSchema();
    a = await instance(schema.url);
    b = await instance(schema.url);
    blocker = new Client({ connectionString: schema.url });
    await blocker.connect();
  });
  afterEach(async () => {
    jest.restoreAllMocks();
    await blocker.end();
    await a.close();
    await b.close();
    await schema.drop();
  });

  const endpoint = async (on: Instance, url: string, disabled = false, eventTypes?: string[]) =>
    (
      await on.endpoints.create(
        { id: ids.next(), url, description: '', disabled, secret: newSecret(), eventTypes },
        100,
      )
    ).id;

  /** Each message and who it is owed to: `[event type, payload, endpoint ids]`, by payload. */
  const outbox = async () => {
    const { rows } = await schema.admin(
      `SELECT m.event_type, m.payload, coalesce(array_agg(d.endpoint_id ORDER BY d.endpoint_id) FILTER (WHERE d.id IS NOT NULL), '{}') AS endpoints
       FROM ${schema.name}.webhook_messages m LEFT JOIN ${schema.name}.webhook_deliveries d ON d.message_id = m.id
       GROUP BY m.id ORDER BY m.payload, m.event_type`,
    );
    return rows.map((row) =>
      row.event_type === 'plant.created' ? [row.payload, row.endpoints] : [row.event_type, row.payload, row.endpoints],
    );
  };

  /** How many locks on `table` in `mode` are waited for (granted: false) or held. */
  const tableLocks = async (table: string, mode: 'ShareLock' | 'RowExclusiveLock', granted: boolean) => {
    const { rows } = await schema.admin(
      `SELECT count(*)::int AS n FROM pg_locks l JOIN pg_class c ON c.oid = l.relation JOIN pg_namespace n ON n.oid = c.relnamespace
       WHERE n.nspname = $1 AND c.relname = $2 AND l.mode = $3 AND l.granted = $4`,
      [schema.name, table, mode, granted],
    );
    return rows[0].n as number;
  };
  const messagesLock = async (mode: 'ShareLock' | 'RowExclusiveLock', granted: boolean) =>
    (await tableLocks('webhook_messages', mode, granted)) > 0;

  /**
   * Holds a create's transaction inside its outbox statement, after that statement took its lock on
   * `webhook_messages` (its first table written) and before its snapshot: another transaction holds
   * `webhook_deliveries` (its next) in SHARE mode. `release` lets it go on.
   */
  const holdInOutboxStatement = async () => {
    await blocker.query('BEGIN');
    await blocker.query('LOCK TABLE webhook_deliveries IN SHARE MODE');
    return { release: () => blocker.query('ROLLBACK') };
  };
  /** How many outbox statements are held so. */
  const outboxStatementsWaiting = () => tableLocks('webhook_deliveries', 'RowExclusiveLock', false);

  /** The text of each statement the pools' clients sent since `query` was last cleared. */
  const sent = (query: jest.SpyInstance) =>
    query.mock.calls.map(([config]) => (typeof config === 'string' ? config : (config as { text: string }).text));
  const batchOf = (first: number, count = 5) =>
    Promise.all(
      Array.from({ length: count }, (_, i) => a.plants.create({ id: BigInt(first + i), name: `plant ${first + i}` })),
    );
  const oneStatement = expect.stringMatching(
    /^WITH insert_once_written AS \(\s*INSERT INTO "plants".*outbox_endpoints AS/s,
  );
  const plantIds = async () =>
    (await schema.admin(`SELECT id FROM ${schema.name}.plants ORDER BY id`)).rows.map((row) => String(row.id));

  it('should store a batch of new plants and its outbox as one autocommitted statement, one message and delivery each', async () => {
    const query = jest.spyOn(Client.prototype, 'query');
    await expect(batchOf(1)).resolves.toEqual(Array(5).fill({ created: true }));
    expect(sent(query)).toEqual([oneStatement]);
    await endpoint(b, 'http://127.0.0.1:1/a');
    query.mockClear();
    await expect(batchOf(11)).resolves.toEqual(Array(5).fill({ created: true }));
    expect(sent(query)).toEqual([oneStatement]);
    expect((await outbox()).map(([, endpoints]) => (endpoints as string[]).length)).toEqual([1, 1, 1, 1, 1]);
    expect(a.wakes).toBe(1);
  });

  it('should store a batch with a stored id in a transaction after the one statement stored nothing: each answered, one event for the new plant', async () => {
    const endpointId = await endpoint(b, 'http://127.0.0.1:1/a');
    await Promise.all([a.plants.create({ id: 1n, name: 'Fern' }), a.plants.create({ id: 2n, name: 'Moss' })]);
    const query = jest.spyOn(Client.prototype, 'query');
    const results = await Promise.allSettled([
      a.plants.create({ id: 3n, name: 'Ivy' }), // new
      a.plants.create({ id: 1n, name: 'Fern' }), // replay
      a.plants.create({ id: 2n, name: 'Palm' }), // conflict
    ]);
    expect(results.map((result) => (result.status === 'fulfilled' ? result.value.created : 'rejected'))).toEqual([
      true,
      false,
      'rejected',
    ]);
    expect(sent(query)).toEqual([
      oneStatement,
      'BEGIN',
      expect.stringMatching(/^\s*INSERT INTO "plants"/),
      expect.stringMatching(/^SELECT .* FROM "plants"/),
      expect.stringMatching(/^\s*WITH outbox_endpoints AS/),
      'COMMIT',
    ]);
    expect(await outbox()).toEqual([
      ['{"id":1,"name":"Fern"}', [endpointId]],
      ['{"id":2,"name":"Moss"}', [endpointId]],
      ['{"id":3,"name":"Ivy"}', [endpointId]],
    ]);
  });

  it('should store a batch that names an id twice in a transaction at once, not try it as one statement', async () => {
    const query = jest.spyOn(Client.prototype, 'query');
    await Promise.all([a.plants.create({ id: 1n, name: 'Fern' }), a.plants.create({ id: 1n, name: 'Fern' })]);
    expect(sent(query)[0]).toBe('BEGIN');
  });

  describe('writeInOneStatement', () => {
    const insert = (ids: number[]) =>
      CompiledQuery.raw(
        "INSERT INTO plants (id, name) SELECT id, 'p' || id FROM unnest($1::bigint[]) AS t (id) ON CONFLICT (id) DO NOTHING RETURNING id",
        [ids],
      );
    const plantsCreated = () => new OutboxWriter(a.outbox, () => a.wakes++, PLANT_CREATED);
    const items = (ids: number[]) => ids.map((id) => ({ id: BigInt(id), name: `p${id}` }));

    it('should leave no plant, message or delivery behind when its guard fails (a row was there), and answer false', async () => {
      await endpoint(b, 'http://127.0.0.1:1/a');
      await a.plants.create({ id: 2n, name: 'p2' });
      const before = await outbox();
      const connections = a.database.pool.totalCount;
      const written = a.database.writeInOneStatement('store plants', insert([1, 2, 3]), 3, (tx) =>
        plantsCreated().publish(tx, items([1, 2, 3])),
      );
      await expect(written).resolves.toBe(false);
      expect(a.database.pool.totalCount).toBe(connections); // its connection kept for the next batch
      expect(await plantIds()).toEqual(['2']);
      expect(await outbox()).toEqual(before);
      expect(a.wakes).toBe(1); // the create of 2 only
    });

    it('should store the rows and their events when every row is new, and run the callbacks after', async () => {
      await endpoint(b, 'http://127.0.0.1:1/a');
      const written = a.database.writeInOneStatement('store plants', insert([4, 5]), 2, (tx) =>
        plantsCreated().publish(tx, items([4, 5])),
      );
      await expect(written).resolves.toBe(true);
      expect(await plantIds()).toEqual(['4', '5']);
      expect((await outbox()).map(([payload]) => payload)).toEqual(['{"id":4,"name":"p4"}', '{"id":5,"name":"p5"}']);
      expect(a.wakes).toBe(1);
    });

    it('should write nothing and answer false when publish asks for two statements at once', async () => {
      const written = a.database.writeInOneStatement('store plants', insert([6]), 1, async (tx) => {
        await Promise.all([tx.execute(CompiledQuery.raw('SELECT 1')), tx.execute(CompiledQuery.raw('SELECT 2'))]);
      });
      await expect(written).resolves.toBe(false);
      expect(await plantIds()).toEqual([]);
    });

    it('should store the rows alone when publish writes nothing', async () => {
      const written = a.database.writeInOneStatement('store plants', insert([7]), 1, () => Promise.resolve());
      await expect(written).resolves.toBe(true);
      expect(await plantIds()).toEqual(['7']);
    });
  });

  it('should write no message or delivery while no endpoint is enabled, and wake nothing', async () => {
    await endpoint(b, 'http://127.0.0.1:1/off', true);
    await a.plants.create({ id: 1n, name: 'Aloe' });
    expect(await outbox()).toEqual([]);
    expect(a.wakes).toBe(0);
  });

  it('should owe the very next create to an endpoint that another instance just created or enabled (no cache)', async () => {
    await a.plants.create({ id: 1n, name: 'before' });
    const first = await endpoint(b, 'http://127.0.0.1:1/a');
    await a.plants.create({ id: 2n, name: 'after create' });
    const second = await endpoint(b, 'http://127.0.0.1:1/b', true);
    await b.endpoints.update(second, { disabled: false });
    await a.plants.create({ id: 3n, name: 'after enable' });
    expect(await outbox()).toEqual([
      ['{"id":2,"name":"after create"}', [first]],
      ['{"id":3,"name":"after enable"}', [first, second].sort()],
    ]);
    expect(a.wakes).toBe(2);
  });

  it('should keep replays and conflicts out of the outbox, and write one event for an id sent twice in a batch', async () => {
    const endpointId = await endpoint(b, 'http://127.0.0.1:1/a');
    await a.plants.create({ id: 1n, name: 'Fern' });
    const results = await Promise.allSettled([
      a.plants.create({ id: 1n, name: 'Fern' }), // replay of a stored plant
      a.plants.create({ id: 2n, name: 'Moss', tag: 'first' }),
      a.plants.create({ id: 2n, name: 'Moss', tag: 'first' }), // replay within the batch
      a.plants.create({ id: 2n, name: 'Moss', tag: 'other' }), // conflict within the batch
    ]);
    expect(results.map((result) => (result.status === 'fulfilled' ? result.value.created : 'rejected'))).toEqual([
      false,
      true,
      false,
      'rejected',
    ]);
    expect(await outbox()).toEqual([
      ['{"id":1,"name":"Fern"}', [endpointId]],
      ['{"id":2,"name":"Moss","tag":"first"}', [endpointId]],
    ]);
  });

  it('should delete a plant once when both instances delete it at once: one finds it, one event', async () => {
    const endpointId = await endpoint(b, 'http://127.0.0.1:1/deleted', false, ['plant.deleted']);
    await a.plants.create({ id: 5n, name: 'Fern', tag: 'shade' });
    for (let round = 0; round < 5; round++) {
      const id = BigInt(10 + round);
      await a.plants.create({ id, name: 'Moss' });
      expect((await Promise.all([a.plants.delete(id), b.plants.delete(id)])).filter(Boolean)).toHaveLength(1);
    }
    expect(await Promise.all([a.plants.delete(5n), b.plants.delete(5n)])).toContain(true);
    expect(await outbox()).toEqual([
      ...[10, 11, 12, 13, 14].map((id) => ['plant.deleted', `{"id":${id},"name":"Moss"}`, [endpointId]]),
      ['plant.deleted', '{"id":5,"name":"Fern","tag":"shade"}', [endpointId]],
    ]);
  });

  describe('when an endpoint change meets a write in flight on another instance', () => {
    it.each<[string, (endpointId: string) => Promise<unknown>]>([
      ['creating an endpoint', () => endpoint(b, 'http://127.0.0.1:1/new')],
      ['enabling an endpoint', (endpointId) => b.endpoints.update(endpointId, { disabled: false })],
      ['reconciling WEBHOOK_URLS', () => b.endpoints.reconcile(['http://127.0.0.1:1/config'], () => ids.next())],
    ])(
      'should wait for a create that has written its outbox before %s, so the create, committed first, owes the endpoint nothing',
      async (_label, change) => {
        const disabled = await endpoint(b, 'http://127.0.0.1:1/disabled', true);
        const held = await holdInOutboxStatement();
        const created = a.plants.create({ id: 7n, name: 'in flight' });
        await until(async () => (await outboxStatementsWaiting()) === 1, 'the create held in its outbox statement');
        const changed = change(disabled);
        await until(() => messagesLock('ShareLock', false), 'the change waiting for the create');
        await held.release();
        await expect(created).resolves.toEqual({ created: true });
        await changed;
        expect(await outbox()).toEqual([]); // it committed before the endpoint was there
        await a.plants.create({ id: 8n, name: 'next' });
        expect((await outbox()).map(([payload]) => payload)).toEqual(['{"id":8,"name":"next"}']);
      },
    );

    it('should make the create wait for an endpoint being enabled, then owe it the event', async () => {
      const endpointId = await endpoint(b, 'http://127.0.0.1:1/a', true);
      // Another transaction holds the endpoint's row: instance B's enable (its outbox lock taken
      // with its BEGIN) waits for it before its UPDATE.
      await blocker.query('BEGIN');
      await blocker.query('SELECT 1 FROM webhook_endpoints WHERE id = $1 FOR UPDATE', [endpointId]);
      const enabled = b.endpoints.update(endpointId, { disabled: false });
      await until(() => messagesLock('ShareLock', true), 'the enable holding the outbox lock');
      const created = a.plants.create({ id: 7n, name: 'waited' });
      await until(() => messagesLock('RowExclusiveLock', false), 'the create waiting for the enable');
      await blocker.query('COMMIT');
      await expect(enabled).resolves.toMatchObject({ id: endpointId, disabled: false });
      await expect(created).resolves.toEqual({ created: true });
      // The enable committed before the create's outbox statement could take its snapshot: the event is owed.
      expect(await outbox()).toEqual([['{"id":7,"name":"waited"}', [endpointId]]]);
      expect(a.wakes).toBe(1);
    });

    it('should delete an endpoint only after the writes in flight, leaving none of its deliveries behind', async () => {
      const endpointId = await endpoint(b, 'http://127.0.0.1:1/a', false, ['plant.created', 'plant.deleted']);
      await a.plants.create({ id: 6n, name: 'to delete' });
      const held = await holdInOutboxStatement();
      const created = a.plants.create({ id: 7n, name: 'in flight' });
      const deletedPlant = b.plants.delete(6n);
      await until(async () => (await outboxStatementsWaiting()) === 2, 'the create and the delete held');
      const deleted = b.endpoints.delete(endpointId);
      await until(() => messagesLock('ShareLock', false), 'the delete waiting for the writes');
      await held.release();
      await expect(created).resolves.toMatchObject({ created: true });
      await expect(deletedPlant).resolves.toBe(true);
      await expect(deleted).resolves.toBe(true);
      // The writes saw the endpoint and wrote its deliveries; the delete, after them, took them away.
      expect((await outbox()).map((message) => message.at(-1))).toEqual([[], [], []]);
      const { rows } = await schema.admin(`SELECT count(*)::int AS n FROM ${schema.name}.webhook_deliveries`);
      expect(rows).toEqual([{ n: 0 }]);
    });
  });
});

/**
 * A recover on several instances at once (CONTRACT: "Resend and recover on several instances over
 * one PostgreSQL send each delivery once"): batches of the real size, each instance its own pool, the
 * dispatch policy deciding each result as the dispatcher does.
 */
describePostgres('recover across instances (PostgreSQL)', () => {
  /** One retry: two attempts on a schedule. */
  const SCHEDULE = [0];
  const attempt = { atMs: Date.now(), durationMs: 2 };
  let schema: TestSchema;
  let a: Instance;
  let b: Instance;

  beforeEach(async () => {
    schema = await createTestSchema();
    a = await instance(schema.url);
    b = await instance(schema.url);
  });
  afterEach(async () => {
    await a.close();
    await b.close();
    await schema.drop();
  });

  /**
   * Both instances send whatever is due, at once, to a receiver that refuses every event (500), until
   * nothing is: resolves with how many times each delivery was claimed, by its row id.
   */
  const refuseAll = async () => {
    const claims = new Map<string, number>();
    const work = async (on: Instance) => {
      for (let claimed = await on.queue.claim(300, 60_000, 1000); claimed.length > 0;) {
        for (const delivery of claimed) claims.set(delivery.id, (claims.get(delivery.id) ?? 0) + 1);
        const results = claimed.map((delivery) => ({
          delivery,
          result: attemptResult(
            { outcome: '5xx' as const, status: 500, detail: 'HTTP 500', ...attempt },
            delivery.attemptsOnSchedule,
            SCHEDULE,
          ),
        }));
        await on.queue.record(results, 86_400_000, SCHEDULE);
        claimed = await on.queue.claim(300, 60_000, 1000);
      }
    };
    await Promise.all([work(a), work(b)]);
    return claims;
  };
  /** Each delivery's status, attempts and attempt rows, counted: `{ "failed 2 2": 1100 }`. */
  const states = async () => {
    const { rows } = await schema.admin(
      `SELECT d.status || ' ' || d.attempts || ' ' || (SELECT count(*) FROM ${schema.name}.webhook_attempts t WHERE t.delivery_id = d.id) AS state,
              count(*)::int AS n
       FROM ${schema.name}.webhook_deliveries d GROUP BY 1 ORDER BY 1`,
    );
    return Object.fromEntries(rows.map((row) => [row.state as string, row.n as number]));
  };

  it('should bring a backlog of several batches back once between two instances recovering at once, each on its whole schedule', async () => {
    const endpointId = (
      await a.endpoints.create(
        { id: ids.next(), url: 'http://127.0.0.1:1/a', description: '', disabled: false, secret: newSecret() },
        100,
      )
    ).id;
    const backlog = 2 * RECOVER_BATCH_SIZE + 100;
    await Promise.all(Array.from({ length: backlog }, (_, i) => a.plants.create({ id: BigInt(i + 1), name: `p${i}` })));
    expect(new Set((await refuseAll()).values())).toEqual(new Set([2]));
    expect(await states()).toEqual({ 'failed 2 2': backlog });

    const batches = [jest.spyOn(a.log, 'recoverBatch'), jest.spyOn(b.log, 'recoverBatch')];
    const recover = (on: Instance) =>
      recoverInBatches(
        on.log,
        endpointId,
        { sinceMs: Date.now() - 600_000 },
        {
          batchSize: RECOVER_BATCH_SIZE,
          stop: new AbortController().signal,
          queued: () => undefined,
        },
      );
    const [fromA, fromB] = await Promise.all([recover(a), recover(b)]);
    expect(fromA.queued + fromB.queued).toBe(backlog);
    // Each walked the whole range in batches (three at least: 500, 500, 100).
    for (const spy of batches) expect(spy.mock.calls.length).toBeGreaterThanOrEqual(3);
    // Sent by both instances at once: each delivery twice more (its whole schedule), never more.
    expect(new Set((await refuseAll()).values())).toEqual(new Set([2]));
    expect(await states()).toEqual({ 'failed 4 4': backlog });
  });
});
