/**
 * The store's dialect, for the few queries that must differ (PostgreSQL's `unnest` batch insert,
 * SQLite's one transaction per batch: `InsertOnce`): each difference is one method named for its
 * store, picked on `kind`; everything else is written once with the query builder. `DatabaseModule`
 * provides it (the `Database` itself).
 */
export abstract class SqlDialect {
  abstract readonly kind: 'sqlite' | 'postgres';
}
