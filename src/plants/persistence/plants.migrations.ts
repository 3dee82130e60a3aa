import { Migration } from '../../database/migration';

/** The plants feature's steps of the schema (see `Migration` for the names). */
export const PLANTS_MIGRATIONS: readonly Migration[] = [
  {
    name: 'plants/2026-11-20-01-create-plants',
    legacyVersion: 1,
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
