import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Database } from '../../src/database/database';
import { Migration } from '../../src/database/migration';
import { PostgresDatabase } from '../../src/database/postgres-database';
import { SqliteDatabase } from '../../src/database/sqlite-database';
import { createTestSchema, describeOnEachStore, TestSchema } from './postgres';

/**
 * A repository suite written once and run on each store, over a fresh database per test: a real
 * SQLite file in a temporary folder, and (when TEST_DATABASE_URL is set) a fresh PostgreSQL schema,
 * each migrated with `migrations` and closed and removed after the test. `database()` is the open
 * store: give it (and `database().kysely`) to the repository under test, as DatabaseModule does.
 */
export function describeOnEachDatabase(
  title: string,
  migrations: readonly Migration[],
  suite: (database: () => Database) => void,
): void {
  describeOnEachStore(title, (postgres) => {
    let database: SqliteDatabase | PostgresDatabase;
    let dispose: () => Promise<void>;

    beforeEach(async () => {
      if (postgres) {
        const schema: TestSchema = await createTestSchema();
        database = new PostgresDatabase(
          { url: schema.url, poolMax: 10, connectAttempts: 1, queryTimeoutMs: 30_000 },
          migrations,
        );
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

    suite(() => database);
  });
}
