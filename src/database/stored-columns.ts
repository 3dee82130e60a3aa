import { Database } from './database';

/** A column's PostgreSQL type: the arrays of a batch's `unnest`, and how its values read back. */
export type ColumnType = 'bigint' | 'integer' | 'text' | 'boolean' | 'double precision' | 'timestamptz';

/** The column types that hold a row field of type `Field`, nullable or not. */
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
type Conversions = Partial<Record<ColumnType, Convert>>;

const toNumber: Convert = (value) => (typeof value === 'bigint' ? Number(value) : value);

/*
 * Each store's conversions besides its driver's own, so a row reads back as written (null and a value
 * already right pass as they are). SQLite reads every INTEGER as a bigint (safe integers: exact int64 ids)
 * and a flag as 0/1, and binds no boolean or Date (a time is ISO 8601 text). pg reads an int8 as its text
 * (never a rounded double); a bigint goes to it as its text, exact, as pg would send it anyway.
 */
const READ: Record<Database['kind'], Conversions> = {
  sqlite: {
    integer: toNumber,
    'double precision': toNumber,
    boolean: (value) => (typeof value === 'bigint' ? value !== 0n : value),
    timestamptz: (value) => (typeof value === 'string' ? new Date(value) : value),
  },
  postgres: { bigint: (value) => (typeof value === 'string' ? BigInt(value) : value) },
};
const WRITE: Record<Database['kind'], Conversions> = {
  sqlite: {
    boolean: (value) => (typeof value === 'boolean' ? Number(value) : value),
    timestamptz: (value) => (value instanceof Date ? value.toISOString() : value),
  },
  postgres: { bigint: (value) => (typeof value === 'bigint' ? String(value) : value) },
};

/** A table's columns on one store: a row as the feature types it, written and read back the same. */
export class StoredColumns<Row extends { readonly id: bigint }> {
  /** The column names, `id` among them, in the order given. */
  readonly names: readonly (keyof Row & string)[];
  private readonly reads: Partial<Record<keyof Row & string, Convert>> = {};
  private readonly writes: Partial<Record<keyof Row & string, Convert>> = {};

  constructor(
    kind: Database['kind'],
    readonly types: ColumnsOf<Row>,
  ) {
    this.names = Object.keys(types) as (keyof Row & string)[];
    for (const name of this.names) {
      this.reads[name] = READ[kind][types[name]];
      this.writes[name] = WRITE[kind][types[name]];
    }
  }

  /** A row as the store returned it, typed as `Row`: its columns only (a statement may return more). */
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
}
