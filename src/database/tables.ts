import { ColumnType } from 'kysely';

/**
 * Every feature's tables, for the typed query builder (`Kysely<Tables>`). Empty here on purpose: each
 * feature adds its own tables by declaration merging, in its persistence folder, so adding a
 * resource edits nothing shared; a table's type derives from its declaration of columns (`columns.ts`):
 *
 * ```ts
 * declare module '../../database/tables' {
 *   interface Tables { plants: TableOf<typeof PLANT_COLUMNS> }
 * }
 * ```
 */
// eslint-disable-next-line @typescript-eslint/no-empty-object-type
export interface Tables {}

/**
 * A 64-bit integer column, exact both ways: written as a bigint; read as a bigint from SQLite (safe
 * integers) and as decimal text from PostgreSQL (pg never turns an int8 into a double); `InsertOnce`
 * makes either one the exact bigint.
 */
export type Int64Column = ColumnType<bigint | string, bigint, bigint>;

/**
 * A 32-bit integer column (`INTEGER` on both stores): written as a number, read as a bigint from
 * SQLite and a number from PostgreSQL; `InsertOnce` (its `integer` columns) makes either one a number.
 */
export type IntegerColumn = ColumnType<number | bigint, number, number>;

/**
 * A flag column (`BOOLEAN` on PostgreSQL, `INTEGER` 0/1 on SQLite, which has no boolean): read as a
 * boolean from PostgreSQL and 0n/1n from SQLite; `InsertOnce` (its `boolean` columns) makes either a
 * boolean. A query of your own writes it as `sql.lit(true)` / `sql.lit(false)`, which both stores take
 * (better-sqlite3 cannot bind a boolean).
 */
export type BooleanColumn = ColumnType<boolean | bigint, boolean | number, boolean | number>;

/**
 * A time column (`TIMESTAMPTZ` on PostgreSQL, ISO 8601 `TEXT` on SQLite): read as a Date from
 * PostgreSQL and as text from SQLite; `InsertOnce` (its `timestamptz` columns) makes either a Date.
 */
export type TimeColumn = ColumnType<Date | string, Date | string, Date | string>;
