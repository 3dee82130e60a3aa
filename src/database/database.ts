import { Migration } from './migration';

/**
 * The one connection of the service to its store (an SQLite file or a PostgreSQL pool), and the DI
 * token of it. `DatabaseModule` opens it and applies every feature's migrations at start-up, and
 * closes it last at shutdown; features use it and never open their own. `SqliteDatabase` and
 * `PostgresDatabase` give their adapters what each dialect needs.
 */
export abstract class Database {
  abstract readonly kind: 'sqlite' | 'postgres';

  /** Where the data lives, for the start-up log, never with a credential: a file, or host:port/database. */
  abstract readonly location: string;

  /** Every feature's migrations in version order; all of them are applied once start-up has finished. */
  abstract readonly migrations: readonly Migration[];

  /** Resolves when the store answers and its schema is migrated; rejects otherwise. For readiness. */
  abstract ping(): Promise<void>;
}
