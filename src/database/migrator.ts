import { CompiledQuery, Kysely, RawBuilder, Transaction } from 'kysely';
import {
  DEFAULT_MIGRATION_LOCK_TABLE,
  DEFAULT_MIGRATION_TABLE,
  Migration as KyselyMigration,
  MIGRATION_LOCK_ID,
  Migrator,
} from 'kysely/migration';
import { Migration } from './migration';
import { StorageError } from './storage.error';

/** Migrations see the schema as it is, not the typed `Tables` (Kysely's `Migration.up` takes the same). */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type SchemaBuilder = Kysely<any>;

/** What differs between the stores in a migration: each step's DDL, the legacy lock, the catalogue. */
export interface MigrationStore {
  /** "SQLite" or "PostgreSQL", for errors. */
  readonly name: string;
  /** Runs one step's DDL inside the migrator's transaction. */
  apply(transaction: SchemaBuilder, migration: Migration): Promise<void>;
  /** Taken first, before the tables and the carry-over, against other instances (old builds too); none on SQLite. */
  readonly legacyLock?: RawBuilder<unknown>;
  /** Returns a row when the legacy `schema_migrations` table exists. */
  readonly findLegacyTable: RawBuilder<unknown>;
}

// Kysely's tables (under its default names) and the integer-versioned table of the builds before named
// migrations (read, never written or dropped); outside `Tables` on purpose: only this file reads them.
interface MigrationTables {
  kysely_migration: { name: string; timestamp: string };
  kysely_migration_lock: { id: string; is_locked: number };
  schema_migrations: { version: number | bigint; applied_at: string | Date };
}

/**
 * Brings the schema up to date with Kysely's `Migrator`, on a connection of its own (no statement
 * or lock timeout: a step may take long, or wait for another instance's):
 * 0. its tables are made, if missing, one instance at a time;
 * 1. a database made by a build with the integer `schema_migrations` has those versions recorded
 *    under their names (`Migration.legacyVersion`), once, so nothing runs again; the old table stays;
 * 2. a name recorded that this build does not know (a newer build migrated it) stops the start;
 * 3. the missing steps run, in name order, in one transaction, one instance at a time.
 */
export async function migrate(
  db: SchemaBuilder,
  store: MigrationStore,
  migrations: readonly Migration[],
): Promise<void> {
  await (db as Kysely<MigrationTables>).transaction().execute(async (transaction) => {
    if (store.legacyLock) await store.legacyLock.execute(transaction);
    await createMigrationTables(transaction);
    await carryOverLegacyVersions(transaction, store, migrations);
    const known = new Set(migrations.map((migration) => migration.name));
    const applied = await transaction.selectFrom(DEFAULT_MIGRATION_TABLE).select('name').execute();
    const unknown = applied.map((row) => row.name).filter((name) => !known.has(name));
    if (unknown.length > 0) {
      throw new Error(`The ${store.name} database has migrations this build does not know (${unknown.join(', ')})`);
    }
  });
  const steps: Record<string, KyselyMigration> = {};
  for (const migration of migrations) steps[migration.name] = { up: (tx) => store.apply(tx, migration) };
  const migrator = new Migrator({ db, allowUnorderedMigrations: true, provider: { getMigrations: async () => steps } });
  const { error, results } = await migrator.migrateToLatest();
  if (error !== undefined) {
    const failed = results?.find((result) => result.status === 'Error')?.migrationName ?? '(before any step)';
    throw new Error(`Migration ${failed} failed: ${(error as Error).message}`, { cause: error });
  }
}

/**
 * Kysely's own tables, as its Migrator defines them, made here under the lock: two instances
 * starting at once race on `CREATE TABLE IF NOT EXISTS` in PostgreSQL, and Kysely's check for them
 * looks into every schema (a database with several schemas would have it skip ours).
 */
async function createMigrationTables(transaction: Transaction<MigrationTables>): Promise<void> {
  await transaction.schema
    .createTable(DEFAULT_MIGRATION_TABLE)
    .ifNotExists()
    .addColumn('name', 'varchar(255)', (column) => column.notNull().primaryKey())
    .addColumn('timestamp', 'varchar(255)', (column) => column.notNull())
    .execute();
  await transaction.schema
    .createTable(DEFAULT_MIGRATION_LOCK_TABLE)
    .ifNotExists()
    .addColumn('id', 'varchar(255)', (column) => column.notNull().primaryKey())
    .addColumn('is_locked', 'integer', (column) => column.notNull().defaultTo(0))
    .execute();
  await transaction
    .insertInto(DEFAULT_MIGRATION_LOCK_TABLE)
    .values({ id: MIGRATION_LOCK_ID, is_locked: 0 })
    .onConflict((conflict) => conflict.column('id').doNothing())
    .execute();
}

async function carryOverLegacyVersions(
  transaction: Transaction<MigrationTables>,
  store: MigrationStore,
  migrations: readonly Migration[],
): Promise<void> {
  if ((await store.findLegacyTable.execute(transaction)).rows.length === 0) return;
  const rows = await transaction.selectFrom('schema_migrations').select(['version', 'applied_at']).execute();
  if (rows.length === 0) return;
  const byVersion = new Map(migrations.map((migration) => [migration.legacyVersion, migration.name]));
  const newest = Math.max(0, ...migrations.flatMap((migration) => migration.legacyVersion ?? []));
  const carried = rows.map((row) => {
    const name = byVersion.get(Number(row.version));
    if (name === undefined) {
      throw new Error(
        `The ${store.name} database has schema version ${row.version}, newer than this build knows (${newest})`,
      );
    }
    return { name, timestamp: new Date(row.applied_at).toISOString() };
  });
  await transaction
    .insertInto(DEFAULT_MIGRATION_TABLE)
    .values(carried)
    .onConflict((conflict) => conflict.column('name').doNothing())
    .execute();
}

/** The query of the applied migrations' names, for readiness. */
export function appliedMigrationsQuery(db: SchemaBuilder): CompiledQuery<{ name: string }> {
  return (db as Kysely<MigrationTables>).selectFrom(DEFAULT_MIGRATION_TABLE).select('name').compile();
}

/** Throws unless every one of `migrations` is among the `applied` rows. */
export function checkMigrated(
  store: string,
  applied: readonly { name: string }[],
  migrations: readonly Migration[],
): void {
  const names = new Set(applied.map((row) => row.name));
  const missing = migrations.filter((migration) => !names.has(migration.name));
  if (missing.length > 0)
    throw new StorageError(`${store} is not migrated`, { cause: missing.map(({ name }) => name) });
}
