/**
 * The one connection of the service to its store (an SQLite file or a PostgreSQL pool), and the DI
 * token of it. `DatabaseModule` opens it and applies every feature's migrations at start-up, and
 * closes it last at shutdown; features use it and never open their own. `SqliteDatabase` and
 * `PostgresDatabase` give their adapters what each dialect needs.
 */
export abstract class Database {
  abstract readonly kind: 'sqlite' | 'postgres';

  /** Resolves when the store answers and its schema is migrated; rejects otherwise. For readiness. */
  abstract ping(): Promise<void>;
}
