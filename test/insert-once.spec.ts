import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import { sql } from 'kysely';
import { ResourceConflictError } from '../src/common/errors/resource-conflict.error';
import { column, ValueOf } from '../src/database/columns';
import { Database } from '../src/database/database';
import { InsertOnce } from '../src/database/insert-once';
import { EventsPort } from '../src/database/insert-once-table';
import { Transaction } from '../src/database/transaction';
import { BUSY_WAIT_MS, SqliteDatabase } from '../src/database/sqlite-database';
import { StorageUnavailableError } from '../src/database/storage-unavailable.error';
import { PLANTS_MIGRATIONS } from '../src/plants/persistence/plants.migrations';
import { describeOnEachDatabase } from './support/stores';

/**
 * The shared create path (a new resource's repository starts with it; plants add the group commit),
 * on each store, over a real table: plants'. Stored once; the same row again is a replay; other
 * content is a 409; concurrent creates of one key store it once; a delete publishes what it removed.
 */
/** Plants' table as far as this test reads it: the tag left out, so NULL. */
const NAMED_COLUMNS = { id: column.int64(), name: column.text() };
type Named = ValueOf<typeof NAMED_COLUMNS>;

interface Ports {
  created?: EventsPort<Named>;
  deleted?: EventsPort<Named>;
  groupCommit?: boolean;
}

/** The create path under test, over plants' table (its tag left empty). */
function namedPlants(database: Database, { created, deleted, groupCommit }: Ports = {}) {
  return new InsertOnce(database, {
    what: 'a plant',
    table: 'plants',
    columns: NAMED_COLUMNS,
    conflict: ({ id }) =>
      new ResourceConflictError(`A plant with id ${id} already exists with a different name or tag`),
    created,
    deleted,
    groupCommit,
  });
}

async function createIn(database: Database, id: bigint, name: string, ports?: Ports) {
  const { created } = await namedPlants(database, ports).create({ id, name });
  return { created };
}

/**
 * A port that records what it is asked to publish, each call with a statement of its own in the
 * transaction (as the outbox's write has), and whether that transaction committed.
 */
class RecordingEvents implements EventsPort<Named> {
  readonly published: string[][] = [];
  readonly committed: string[][] = [];
  async publish(tx: Transaction, items: readonly Named[]): Promise<void> {
    const names = items.map((item) => `${item.id} ${item.name}`);
    await tx.execute(sql`SELECT 1`.compile(this.database().kysely));
    this.published.push(names);
    tx.afterCommit(() => this.committed.push(names));
  }
  constructor(private readonly database: () => Database) {}
}

describeOnEachDatabase('InsertOnce on %s', PLANTS_MIGRATIONS, (database, reopen) => {
  const create = (id: bigint, name: string) => createIn(database(), id, name);
  const names = async (id: bigint) => {
    const stored = await namedPlants(database()).get(id);
    return stored === undefined ? [] : [stored.name];
  };

  it('should store a new key, then answer the same content as a replay', async () => {
    await expect(create(9007199254740993n, 'Monstera')).resolves.toEqual({ created: true });
    await expect(create(9007199254740993n, 'Monstera')).resolves.toEqual({ created: false });
    expect(await names(9007199254740993n)).toEqual(['Monstera']);
  });

  it('should keep what it stored across a restart of the store (reopen), and answer it as a replay there', async () => {
    await expect(create(-(2n ** 63n), 'Fern')).resolves.toEqual({ created: true });
    const before = database();
    await reopen();
    expect(database()).not.toBe(before);
    expect(await names(-(2n ** 63n))).toEqual(['Fern']);
    await expect(create(-(2n ** 63n), 'Fern')).resolves.toEqual({ created: false });
    await expect(create(-(2n ** 63n), 'Ivy')).rejects.toThrow(ResourceConflictError);
  });

  it('should publish a new row once, in the transaction that stored it, never for a replay or a 409', async () => {
    const created = new RecordingEvents(database);
    await expect(createIn(database(), 2n ** 63n - 1n, 'Fern', { created })).resolves.toEqual({ created: true });
    await expect(createIn(database(), 2n ** 63n - 1n, 'Fern', { created })).resolves.toEqual({ created: false });
    await expect(createIn(database(), 2n ** 63n - 1n, 'Ivy', { created })).rejects.toThrow(ResourceConflictError);
    expect(created.published).toEqual([['9223372036854775807 Fern']]);
    expect(created.committed).toEqual([['9223372036854775807 Fern']]);
  });

  it('should store nothing when the events port fails, and let its error through', async () => {
    const failing: EventsPort<Named> = {
      publish: async (tx) => void (await tx.execute(sql`SELECT id FROM no_such_table`.compile(database().kysely))),
    };
    await expect(createIn(database(), 8n, 'Fern', { created: failing })).rejects.toThrow(
      database().kind === 'sqlite' ? 'SQLite failed to store a plant' : 'PostgreSQL failed to store a plant',
    );
    expect(await names(8n)).toEqual([]);
  });

  describe.each([false, true])('deletes (group commit: %s)', (groupCommit) => {
    it('should publish the row as it was stored, in the transaction that deleted it, and nothing for a row that is not there', async () => {
      const deleted = new RecordingEvents(database);
      const plants = namedPlants(database(), { deleted, groupCommit });
      await plants.create({ id: -(2n ** 63n), name: 'Fern' });
      await expect(plants.delete(-(2n ** 63n))).resolves.toBe(true);
      await expect(plants.delete(-(2n ** 63n))).resolves.toBe(false);
      await expect(plants.delete(5n)).resolves.toBe(false);
      expect(deleted.committed).toEqual([['-9223372036854775808 Fern']]);
      expect(await names(-(2n ** 63n))).toEqual([]);
    });

    it('should delete a key once when many delete it at once: one finds it, one event', async () => {
      const deleted = new RecordingEvents(database);
      await create(77n, 'Fern');
      const outcomes = await Promise.all(
        // Each on its own create path, as separate requests (and, without the group commit, transactions) are.
        Array.from({ length: 10 }, () => namedPlants(database(), { deleted, groupCommit }).delete(77n)),
      );
      expect(outcomes.filter(Boolean)).toHaveLength(1);
      expect(deleted.committed).toEqual([['77 Fern']]);
    });

    it('should publish a batch’s events in the order of its writes (SQLite, where one batch holds both)', async () => {
      if (database().kind !== 'sqlite') return; // PostgreSQL commits a turn's creates and deletes apart
      const order: string[] = [];
      const recording = (kind: string): EventsPort<Named> => ({
        publish: async (_tx, items) => void order.push(...items.map((item) => `${kind} ${item.name}`)),
      });
      const plants = namedPlants(database(), {
        created: recording('created'),
        deleted: recording('deleted'),
        groupCommit,
      });
      await plants.create({ id: 66n, name: 'Fern' });
      order.length = 0;
      // One turn: with the group commit, one batch.
      await Promise.all([
        plants.delete(66n),
        plants.create({ id: 66n, name: 'Palm' }),
        plants.delete(66n),
        plants.create({ id: 66n, name: 'Moss' }),
      ]);
      expect(order).toEqual(['deleted Fern', 'created Palm', 'deleted Palm', 'created Moss']);
      expect(await names(66n)).toEqual(['Moss']);
    });

    it('should roll the delete back when its event cannot be written, and let the error through', async () => {
      const failing: EventsPort<Named> = {
        publish: async (tx) => void (await tx.execute(sql`SELECT id FROM no_such_table`.compile(database().kysely))),
      };
      await create(9n, 'Fern');
      await expect(namedPlants(database(), { deleted: failing, groupCommit }).delete(9n)).rejects.toThrow(
        database().kind === 'sqlite' ? 'SQLite failed to delete a plant' : 'PostgreSQL failed to delete a plant',
      );
      expect(await names(9n)).toEqual(['Fern']);
    });
  });

  it('should refuse other content for a stored key with ResourceConflictError, and change nothing', async () => {
    await create(-4n, 'Aloe');
    const conflict = create(-4n, 'Pothos');
    await expect(conflict).rejects.toThrow(ResourceConflictError);
    await expect(conflict).rejects.toThrow('A plant with id -4 already exists with a different name or tag');
    expect(await names(-4n)).toEqual(['Aloe']);
  });

  it('should store a key once when many create it at once, the rest being replays or conflicts', async () => {
    const outcomes = await Promise.allSettled(
      Array.from({ length: 20 }, (_, i) => create(77n, i % 2 === 0 ? 'Fern' : 'Ivy')),
    );
    expect(outcomes.filter((o) => o.status === 'fulfilled' && o.value.created)).toHaveLength(1);
    const rejected = outcomes.filter((o): o is PromiseRejectedResult => o.status === 'rejected');
    expect(rejected).toHaveLength(10);
    for (const o of rejected) expect(o.reason).toBeInstanceOf(ResourceConflictError);
  });
});

describe('InsertOnce on a busy SQLite file (another process holds its write lock)', () => {
  let dir: string;
  let database: SqliteDatabase;
  let other: BetterSqlite3.Database;

  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), 'plant-store-'));
    database = new SqliteDatabase(join(dir, 'store.db'), PLANTS_MIGRATIONS);
    await database.onModuleInit();
    other = new BetterSqlite3(join(dir, 'store.db'));
    other.exec('BEGIN IMMEDIATE');
  });
  afterEach(() => {
    if (other.inTransaction) other.exec('ROLLBACK');
    other.close();
    database.onApplicationShutdown();
    rmSync(dir, { recursive: true, force: true });
  });

  it(`should wait off the event loop and store the row when the lock is released within ${BUSY_WAIT_MS} ms`, async () => {
    const started = Date.now();
    const create = createIn(database, 5n, 'Monstera');
    let settled = false;
    void create.finally(() => (settled = true));
    await new Promise((resolve) => setTimeout(resolve, 100)); // the event loop turns meanwhile
    expect(settled).toBe(false);
    other.exec('COMMIT');
    await expect(create).resolves.toEqual({ created: true });
    expect(Date.now() - started).toBeGreaterThanOrEqual(100);
    await expect(createIn(database, 5n, 'Monstera')).resolves.toEqual({ created: false });
  });

  it(`should answer StorageUnavailableError (a 503) when the lock is held past ${BUSY_WAIT_MS} ms, and store nothing`, async () => {
    const started = Date.now();
    const create = createIn(database, 6n, 'Aloe');
    await expect(create).rejects.toThrow(StorageUnavailableError);
    await expect(create).rejects.toThrow(
      'SQLite failed to store a plant: the SQLite file cannot be written right now (SQLITE_BUSY)',
    );
    expect(Date.now() - started).toBeGreaterThanOrEqual(BUSY_WAIT_MS);
    other.exec('ROLLBACK');
    await expect(namedPlants(database).get(6n)).resolves.toBeUndefined();
  });
});
