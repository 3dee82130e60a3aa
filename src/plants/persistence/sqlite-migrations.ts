/**
 * The schema of the embedded store, one versioned step at a time. Steps are applied in order at
 * start-up and recorded in `schema_migrations`; a released step is never edited, only followed.
 */
export const SQLITE_MIGRATIONS: readonly { version: number; name: string; sql: string }[] = [
  {
    version: 1,
    name: 'create plants',
    // INTEGER PRIMARY KEY is SQLite's 64-bit rowid; STRICT refuses anything but an integer in it.
    sql: `CREATE TABLE plants (
            id   INTEGER PRIMARY KEY,
            name TEXT NOT NULL,
            tag  TEXT
          ) STRICT`,
  },
];
