import { Migration } from '../../database/migration';
import { TableOf } from '../../database/columns';
import { PLANT_COLUMNS } from '../plant';

/** The plants feature's steps of the schema (see `Migration` for the names). A released step is never edited, only followed. */
export const PLANTS_MIGRATIONS: readonly Migration[] = [
  {
    name: 'plants/2026-11-20-01-create-plants',
    legacyVersion: 1,
    // SQLite: INTEGER PRIMARY KEY is the 64-bit rowid; STRICT refuses a value of the wrong type.
    // Your columns, snake_case, in both statements (SQLite / PostgreSQL), NOT NULL when required (and
    // each in the domain file's PLANT_COLUMNS, `.optional()` when it takes NULL):
    // text TEXT / TEXT; an int32 INTEGER / INTEGER; an int64 INTEGER / BIGINT; a double REAL / DOUBLE PRECISION;
    // a flag INTEGER CHECK (done IN (0, 1)) / BOOLEAN (STRICT has no boolean); a time TEXT (ISO 8601) / TIMESTAMPTZ.
    // The field's rules (lengths, bounds, patterns, values) are its DTO preset's: a CHECK for them here
    // would need a new table to change on SQLite, and counts characters unlike the preset.
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

declare module '../../database/tables' {
  interface Tables {
    /** The `plants` table as the steps above leave it, for the query builder: from the domain file's declaration. */
    plants: TableOf<typeof PLANT_COLUMNS>;
  }
}
