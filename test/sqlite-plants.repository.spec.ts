import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { SqliteDatabase } from '../src/database/sqlite-database';
import { PLANTS_MIGRATIONS } from '../src/plants/persistence/plants.migrations';
import { SQLITE_PAGE_SQL, SqlitePlantsRepository } from '../src/plants/persistence/sqlite-plants.repository';
import { describePlantsRepositoryContract } from './plants-repository.contract';

type OpenRepository = SqlitePlantsRepository & { close(): void };

/** The repository on an SqliteDatabase of its own, as DatabaseModule makes it; close() closes the file. */
function openRepository(path: string): OpenRepository {
  const database = new SqliteDatabase(path, PLANTS_MIGRATIONS);
  database.onModuleInit();
  return Object.assign(new SqlitePlantsRepository(database), { close: () => database.onApplicationShutdown() });
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
