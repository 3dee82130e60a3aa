import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import { ResourceConflictError } from '../src/common/errors/resource-conflict.error';
import { Database } from '../src/database/database';
import { insertOnce } from '../src/database/insert-once';
import { BUSY_WAIT_MS, SqliteDatabase } from '../src/database/sqlite-database';
import { StorageUnavailableError } from '../src/database/storage-unavailable.error';
import { PLANTS_MIGRATIONS } from '../src/plants/persistence/plants.migrations';
import { plantQueries } from '../src/plants/persistence/sql-plants.repository';
import { describeOnEachDatabase } from './support/stores';

/**
 * The shared create rule (a new resource's repository starts with it), on each store, over a real
 * table: plants'. Stored once; the same row again is a replay; other content is a 409; concurrent
 * creates of one key store it once.
 */
/** A plant created through `insertOnce` (the rule under test), over plants' table. */
function createIn(database: Database, id: bigint, name: string) {
  const queries = plantQueries(database.kysely);
  return insertOnce(
    database,
    'a plant',
    { insert: queries.insert({ id, name, tag: null }), stored: queries.byId({ id }) },
    (stored) => stored.name === name && stored.tag === null,
    `A plant with id ${id} already exists with a different name or tag`,
  );
}

describeOnEachDatabase('insertOnce on %s', PLANTS_MIGRATIONS, (database, reopen) => {
  const queries = () => plantQueries(database().kysely);
  const create = (id: bigint, name: string) => createIn(database(), id, name);
  const names = async (id: bigint) =>
    (await database().execute('read', queries().byId({ id }))).rows.map((row) => row.name);

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

describe('insertOnce on a busy SQLite file (another process holds its write lock)', () => {
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
    const { rows } = await database.execute('read', plantQueries(database.kysely).byId({ id: 6n }));
    expect(rows).toEqual([]);
  });
});
