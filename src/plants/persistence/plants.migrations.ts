import { Migration } from '../../database/migration';

/** The plants feature's steps of the schema (see `Migration`); version 1 is the first of all. */
export const PLANTS_MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    name: 'create plants',
    // SQLite: INTEGER PRIMARY KEY is the 64-bit rowid; STRICT refuses anything but an integer in it.
    sqlite: `CREATE TABLE plants (
               id   INTEGER PRIMARY KEY,
               name TEXT NOT NULL,
               tag  TEXT
             ) STRICT`,
    postgres: `CREATE TABLE plants (
                 id   BIGINT PRIMARY KEY,
                 name TEXT NOT NULL,
                 tag  TEXT
               )`,
  },
];
