import { Database } from './database';

/** A column's PostgreSQL type: the arrays of a batch's `unnest`, and how its values read back. */
export type ColumnType = 'bigint' | 'integer' | 'text' | 'boolean' | 'double precision' | 'timestamptz';

/**
 * The column types that hold a row field of type `Field` (with `null` for a nullable one): a bigint
 * in a `bigint` column, a number in an `integer` or `double precision` one, a string in `text`, a
 * boolean in `boolean`, a Date in `timestamptz`.
 */
export type ColumnTypeOf<Field> = [NonNullable<Field>] extends [bigint]
  ? 'bigint'
  : [NonNullable<Field>] extends [number]
    ? 'integer' | 'double precision'
    : [NonNullable<Field>] extends [string]
      ? 'text'
      : [NonNullable<Field>] extends [boolean]
        ? 'boolean'
        : [NonNullable<Field>] extends [Date]
          ? 'timestamptz'
          : never;

/** Every column of `Row`, each with a type that holds its field. */
export type ColumnsOf<Row> = { readonly [Column in keyof Row & string]-?: ColumnTypeOf<Row[Column]> };

type Convert = (value: unknown) => unknown;

/*
 * What each store needs besides its driver's own conversions, so a row reads back as it was written.
 * SQLite's connections read every INTEGER as a bigint (safe integers, for exact int64 ids), a flag
 * as 0/1, and cannot bind a boolean or a Date (a time is ISO 8601 text there). pg reads an int8 as
 * its decimal text (never a rounded double), and takes a bigint in an array as its text.
 * Each conversion leaves null (and a value already right) as it is.
 */
const READ: Record<Database['kind'], Partial<Record<ColumnType, Convert>>> = {
  sqlite: {
    integer: (value) => (typeof value === 'bigint' ? Number(value) : value),
    'double precision': (value) => (typeof value === 'bigint' ? Number(value) : value),
    boolean: (value) => (typeof value === 'bigint' ? value !== 0n : value),
    timestamptz: (value) => (typeof value === 'string' ? new Date(value) : value),
  },
  postgres: {
    bigint: (value) => (typeof value === 'string' ? BigInt(value) : value),
  },
};
const WRITE: Record<Database['kind'], Partial<Record<ColumnType, Convert>>> = {
  sqlite: {
    boolean: (value) => (typeof value === 'boolean' ? Number(value) : value),
    timestamptz: (value) => (value instanceof Date ? value.toISOString() : value),
  },
  postgres: {
    bigint: (value) => (typeof value === 'bigint' ? String(value) : value),
  },
};

/**
 * A table's columns on one store: a row as the feature types it (`count: number`, `id: bigint`,
 * `done: boolean`) written to the store and read back the same on either store.
 */
export class StoredColumns<Row extends { readonly id: bigint }> {
  /** The column names, `id` among them, in the order given. */
  readonly names: readonly (keyof Row & string)[];
  private readonly reads: Partial<Record<keyof Row & string, Convert>>;
  private readonly writes: Partial<Record<keyof Row & string, Convert>>;

  constructor(
    kind: Database['kind'],
    readonly types: ColumnsOf<Row>,
  ) {
    this.names = Object.keys(types) as (keyof Row & string)[];
    this.reads = this.converters(READ[kind]);
    this.writes = this.converters(WRITE[kind]);
  }

  /**
   * A row as the store returned it, as the row type says: its columns only (not what else the
   * statement returned), each made its field's type.
   */
  read(stored: Record<string, unknown>): Row {
    const row: Record<string, unknown> = {};
    for (const name of this.names) {
      const read = this.reads[name];
      row[name] = read === undefined ? stored[name] : read(stored[name]);
    }
    return row as Row;
  }

  /** The value of `column` of `row` as the store takes it. */
  write(row: Row, column: keyof Row & string): unknown {
    const write = this.writes[column];
    return write === undefined ? row[column] : write(row[column]);
  }

  /** The row as the store takes it, column by column. */
  stored(row: Row): Record<string, unknown> {
    return Object.fromEntries(this.names.map((name) => [name, this.write(row, name)]));
  }

  /** Per column, the conversion its type needs on this store, if any. */
  private converters(of: Partial<Record<ColumnType, Convert>>): Partial<Record<keyof Row & string, Convert>> {
    const found: Partial<Record<keyof Row & string, Convert>> = {};
    for (const name of this.names) found[name] = of[this.types[name]];
    return found;
  }
}
