/**
 * The PostgreSQL schema, one versioned step at a time, like `SQLITE_MIGRATIONS`. Steps are applied
 * in order at start-up under an advisory lock and recorded in `schema_migrations`.
 */
export const POSTGRES_MIGRATIONS: readonly { version: number; name: string; sql: string }[] = [
  {
    version: 1,
    name: 'create plants',
    sql: `CREATE TABLE plants (
            id   BIGINT PRIMARY KEY,
            name TEXT NOT NULL,
            tag  TEXT
          )`,
  },
];
