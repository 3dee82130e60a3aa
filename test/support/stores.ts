import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Database } from '../../src/database/database';
import { Migration } from '../../src/database/migration';
import { PostgresDatabase } from '../../src/database/postgres-database';
import { SqliteDatabase } from '../../src/database/sqlite-database';
import { createTestSchema, describeOnEachStore, TestSchema } from './postgres';

/** How a test's PostgreSQL store is opened (its pool, and how long a statement may take). */
export interface TestPoolOptions {
  poolMax: number;
  queryTimeoutMs: number;
}

/**
 * A fresh migrated store for each test of the enclosing `describe`: a real SQLite file in a temporary
 * folder, or (`postgres`) a fresh PostgreSQL schema, closed and removed after the test. Returns the
 * open store.
 */
export function useFreshDatabase(
  postgres: boolean,
  migrations: readonly Migration[],
  pool: TestPoolOptions = { poolMax: 10, queryTimeoutMs: 30_000 },
): () => SqliteDatabase | PostgresDatabase {
  let database: SqliteDatabase | PostgresDatabase;
  let dispose: () => Promise<void>;

  beforeEach(async () => {
    if (postgres) {
      const schema: TestSchema = await createTestSchema();
      database = new PostgresDatabase({ url: schema.url, connectAttempts: 1, ...pool }, migrations);
      dispose = () => schema.drop();
    } else {
      const dir = mkdtempSync(join(tmpdir(), 'plant-store-'));
      database = new SqliteDatabase(join(dir, 'store.db'), migrations);
      dispose = async () => rmSync(dir, { recursive: true, force: true });
    }
    await database.onModuleInit();
  });
  afterEach(async () => {
    await database.onApplicationShutdown();
    await dispose();
  });

  return () => database;
}

/**
 * A repository suite written once and run on each store, over a fresh database per test
 * (`useFreshDatabase`): a real SQLite file, and (when TEST_DATABASE_URL is set) a fresh PostgreSQL
 * schema, each migrated with `migrations`. `database()` is the open store: give it (and
 * `database().kysely`) to the repository under test, as DatabaseModule does.
 */
export function describeOnEachDatabase(
  title: string,
  migrations: readonly Migration[],
  suite: (database: () => Database) => void,
): void {
  describeOnEachStore(title, (postgres) => suite(useFreshDatabase(postgres, migrations)));
}
