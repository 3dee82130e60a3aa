import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { SqliteDatabase } from '../src/database/sqlite-database';
import { PLANTS_MIGRATIONS } from '../src/plants/persistence/plants.migrations';
import { SQLITE_PAGE_SQL, SqlitePlantsRepository } from '../src/plants/persistence/sqlite-plants.repository';
import { describePlantsRepositoryContract } from './plants-repository.contract';
import { StorageError } from '../src/database/storage.error';
import { Plant } from '../src/plants/plant';
import { PlantConflictError } from '../src/plants/persistence/plant-conflict.error';
import { PlantEvents } from '../src/plants/plant-events';
import { Transaction } from '../src/database/transaction';
import { SqliteTransaction } from '../src/database/sqlite-database';

type OpenRepository = SqlitePlantsRepository & { close(): void };

/** The repository on an SqliteDatabase of its own, as DatabaseModule makes it; close() closes the file. */
function openRepository(path: string, hook?: PlantEvents): OpenRepository {
  const database = new SqliteDatabase(path, PLANTS_MIGRATIONS);
  database.onModuleInit();
  return Object.assign(new SqlitePlantsRepository(database, hook), { close: () => database.onApplicationShutdown() });
}

/** A hook that records each transaction's new plants, and can make one plant's transaction fail. */
class RecordingHook extends PlantEvents {
  readonly transactions: bigint[][] = [];
  commits = 0;
  failFor?: bigint;

  created(transaction: Transaction, plants: readonly Plant[]): void {
    if (plants.some((plant) => plant.id === this.failFor)) throw new Error('the outbox refused it');
    // A statement on the transaction's own connection, as the outbox writer runs one.
    (transaction as SqliteTransaction).connection.prepare('SELECT 1').get();
    this.transactions.push(plants.map((plant) => plant.id));
  }

  committed(): void {
    this.commits += 1;
  }
}

describePlantsRepositoryContract('SQLite', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'plant-store-sqlite-'));
  const path = join(dir, 'nested', 'plants.db');
  let repository = openRepository(path);
  return {
    repository,
    reopen: async () => {
      repository.close();
      repository = openRepository(path);
      return repository;
    },
    dispose: async () => {
      repository.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
});

describe('SqlitePlantsRepository', () => {
  let dir: string;
  let path: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'plant-store-sqlite-'));
    path = join(dir, 'data', 'plants.db');
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  describe('when it opens a new file', () => {
    it('should create the folder, use WAL, and record the applied migration', () => {
      openRepository(path).close();
      expect(existsSync(path)).toBe(true);
      const db = new Database(path, { readonly: true });
      expect(db.pragma('journal_mode', { simple: true })).toBe('wal');
      expect(db.prepare('SELECT version, name FROM schema_migrations').all()).toEqual([
        { version: 1, name: 'create plants' },
      ]);
      const columns = db.prepare('SELECT name, type, pk FROM pragma_table_info(?)').all('plants');
      expect(columns).toEqual([
        { name: 'id', type: 'INTEGER', pk: 1 },
        { name: 'name', type: 'TEXT', pk: 0 },
        { name: 'tag', type: 'TEXT', pk: 0 },
      ]);
      db.close();
    });
  });

  describe('when it opens an existing file', () => {
    it('should apply no migration twice', () => {
      openRepository(path).close();
      openRepository(path).close();
      const db = new Database(path, { readonly: true });
      expect(db.prepare('SELECT count(*) AS n FROM schema_migrations').get()).toEqual({ n: 1 });
      db.close();
    });

    it('should refuse a schema newer than it knows', () => {
      openRepository(path).close();
      const db = new Database(path);
      db.prepare("INSERT INTO schema_migrations VALUES (99, 'from the future', '2030-01-01')").run();
      db.close();
      expect(() => openRepository(path)).toThrow(
        'The SQLite database has schema version 99, newer than this build knows (1)',
      );
    });
  });

  describe('group commit', () => {
    let hook: RecordingHook;
    let repository: OpenRepository;
    beforeEach(() => {
      hook = new RecordingHook();
      repository = openRepository(path, hook);
    });
    afterEach(async () => {
      await repository.onModuleDestroy();
      repository.close();
    });

    it('should commit the creates that arrive together in one transaction, each answered on its own', async () => {
      await repository.create({ id: 5n, name: 'already there' });
      const results = await Promise.all([
        ...[1n, 2n, 3n].map((id) => repository.create({ id, name: `plant ${id}` })),
        repository.create({ id: 5n, name: 'already there' }),
        repository.create({ id: 5n, name: 'another name' }).catch((error: unknown) => error),
        repository.create({ id: 4n, name: 'plant 4', tag: 'last' }),
      ]);
      expect(results).toEqual([
        { plant: { id: 1n, name: 'plant 1' }, created: true },
        { plant: { id: 2n, name: 'plant 2' }, created: true },
        { plant: { id: 3n, name: 'plant 3' }, created: true },
        { plant: { id: 5n, name: 'already there' }, created: false },
        new PlantConflictError(5n),
        { plant: { id: 4n, name: 'plant 4', tag: 'last' }, created: true },
      ]);
      // The first create alone, then one transaction for the six that came together.
      expect(hook.transactions).toEqual([[5n], [1n, 2n, 3n, 4n]]);
      expect(hook.commits).toBe(2);
    });

    it('should keep the order of creates and deletes of one id within a batch', async () => {
      const outcomes = await Promise.all([
        repository.create({ id: 7n, name: 'first' }),
        repository.delete(7n),
        repository.delete(7n),
        repository.create({ id: 7n, name: 'second' }),
      ]);
      expect(outcomes).toEqual([
        { plant: { id: 7n, name: 'first' }, created: true },
        true,
        false,
        { plant: { id: 7n, name: 'second' }, created: true },
      ]);
      await expect(repository.get(7n)).resolves.toEqual({ id: 7n, name: 'second' });
      expect(hook.transactions).toEqual([[7n, 7n]]);
    });

    it('should fail only the write whose statement failed, and store the others', async () => {
      hook.failFor = 12n;
      const results = await Promise.allSettled([11n, 12n, 13n].map((id) => repository.create({ id, name: 'x' })));
      expect(results.map((result) => result.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
      expect((results[1] as PromiseRejectedResult).reason).toBeInstanceOf(StorageError);
      expect((results[1] as PromiseRejectedResult).reason.message).toBe('SQLite failed to store a plant');
      await expect(repository.get(11n)).resolves.toEqual({ id: 11n, name: 'x' });
      await expect(repository.get(12n)).resolves.toBeUndefined();
      await expect(repository.get(13n)).resolves.toEqual({ id: 13n, name: 'x' });
    });

    it('should not let a read see part of a batch', async () => {
      const creates = [21n, 22n, 23n].map((id) => repository.create({ id, name: 'batched' }));
      // Asked in the same turn, the read runs before the batch: it sees none of it, then all of it.
      await expect(repository.list({ limit: 10 })).resolves.toEqual([]);
      await Promise.all(creates);
      await expect(repository.list({ limit: 10 })).resolves.toHaveLength(3);
    });
  });

  it('should store ids in a 64-bit integer column, not as text or a double', async () => {
    const repository = openRepository(path);
    await repository.create({ id: 2n ** 63n - 1n, name: 'max' });
    repository.close();
    const db = new Database(path, { readonly: true });
    db.defaultSafeIntegers(true);
    expect(db.prepare('SELECT id, typeof(id) AS type FROM plants').get()).toEqual({
      id: 2n ** 63n - 1n,
      type: 'integer',
    });
    db.close();
  });

  it('should read a page by a range search on the primary key, never a scan from the start', () => {
    openRepository(path).close();
    const db = new Database(path);
    db.exec(`WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 20000)
             INSERT INTO plants (id, name) SELECT i, 'p' FROM n`);
    const plan = (sql: string, ...params: unknown[]) =>
      db
        .prepare(`EXPLAIN QUERY PLAN ${sql}`)
        .all(...params)
        .map((row) => (row as { detail: string }).detail);
    // Deep in the store: a search from the cursor, no sort, no temporary b-tree.
    expect(plan(SQLITE_PAGE_SQL.after, 19000, 100)).toEqual(['SEARCH plants USING INTEGER PRIMARY KEY (rowid>?)']);
    // The first page walks the rowid order from its start, which is where it stops.
    expect(plan(SQLITE_PAGE_SQL.first, 100)).toEqual(['SCAN plants']);
    db.close();
  });
});
