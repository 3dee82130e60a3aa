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

/** The open store of the current test (a function, called in the test), and how to restart it. */
export interface FreshDatabase {
  (): SqliteDatabase | PostgresDatabase;
  /**
   * Closes the store and opens it again on the same file or schema, migrations and all, as a
   * restart of the service would: what was committed must be there, through the new store.
   * Everything built on the old store (a repository) must be built again from `database()`.
   */
  reopen(): Promise<void>;
}

/**
 * A fresh migrated store for each test of the enclosing `describe`: a real SQLite file in a temporary
 * folder, or (`postgres`) a fresh PostgreSQL schema, closed and removed after the test. Returns the
 * open store, and `reopen()`.
 */
export function useFreshDatabase(
  postgres: boolean,
  migrations: readonly Migration[],
  pool: TestPoolOptions = { poolMax: 10, queryTimeoutMs: 30_000 },
): FreshDatabase {
  let database: SqliteDatabase | PostgresDatabase | undefined;
  let open: () => SqliteDatabase | PostgresDatabase;
  let dispose: () => Promise<void>;

  beforeEach(async () => {
    if (postgres) {
      const schema: TestSchema = await createTestSchema();
      open = () => new PostgresDatabase({ url: schema.url, connectAttempts: 1, ...pool }, migrations);
      dispose = () => schema.drop();
    } else {
      const dir = mkdtempSync(join(tmpdir(), 'plant-store-'));
      open = () => new SqliteDatabase(join(dir, 'store.db'), migrations);
      dispose = async () => rmSync(dir, { recursive: true, force: true });
    }
    database = open();
    await database.onModuleInit();
  });
  afterEach(async () => {
    await database?.onApplicationShutdown();
    database = undefined;
    await dispose();
  });

  const current = () => {
    if (database === undefined) throw new Error('The store is not open: use it inside a test, not while reopening');
    return database;
  };
  return Object.assign(current, {
    reopen: async () => {
      const closing = current();
      database = undefined;
      await closing.onApplicationShutdown();
      const reopened = open();
      await reopened.onModuleInit();
      database = reopened;
    },
  });
}

/**
 * A repository suite written once and run on each store, over a fresh database per test
 * (`useFreshDatabase`): a real SQLite file, and (when TEST_DATABASE_URL is set) a fresh PostgreSQL
 * schema, each migrated with `migrations`. `database()` is the open store: give it (and
 * `database().kysely`) to the repository under test, as DatabaseModule does. `reopen()` restarts it
 * on the same file or schema (build the repository again afterwards), to show that data survives.
 */
export function describeOnEachDatabase(
  title: string,
  migrations: readonly Migration[],
  suite: (database: () => Database, reopen: () => Promise<void>) => void,
): void {
  describeOnEachStore(title, (postgres) => {
    const database = useFreshDatabase(postgres, migrations);
    suite(database, () => database.reopen());
  });
}
