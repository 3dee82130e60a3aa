import { PostgresDatabase } from './postgres-database';
import { SqliteDatabase } from './sqlite-database';

/** One choice per store, each given that store's own connection. */
export interface DialectChoices<T> {
  sqlite(store: SqliteDatabase): T;
  postgres(store: PostgresDatabase): T;
}

/**
 * The store's dialect as a capability, for the few queries that must differ (PostgreSQL's `unnest`
 * batch insert, SQLite's synchronous group commit). A repository calls `choose` once, in one named
 * method per dialect; everything else is written once with the query builder. `DatabaseModule`
 * provides it (the `Database` itself), so no feature asks which store it runs on.
 */
export abstract class SqlDialect {
  abstract readonly kind: 'sqlite' | 'postgres';

  /** The choice for this store, called with that store. */
  abstract choose<T>(choices: DialectChoices<T>): T;
}
