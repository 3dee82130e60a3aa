import { ColumnName, columnName, Columns, ColumnType, RowOf } from './columns';
import { Database } from './database';

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

/** A table's columns on one store, from its declaration: a row as `RowOf` types it, written and read back the same. */
export class StoredColumns<C extends Columns> {
  /** The column names, `id` among them, in the declaration's order. */
  readonly names: readonly ColumnName<keyof C & string>[];
  /** Each column's PostgreSQL type, by column name. */
  readonly types: Readonly<Record<string, ColumnType>>;
  private readonly reads: Record<string, Convert | undefined> = {};
  private readonly writes: Record<string, Convert | undefined> = {};

  constructor(kind: Database['kind'], columns: C) {
    const types: Record<string, ColumnType> = {};
    for (const [field, { type }] of Object.entries(columns)) {
      const name = columnName(field);
      types[name] = type;
      this.reads[name] = READ[kind][type];
      this.writes[name] = WRITE[kind][type];
    }
    this.types = types;
    this.names = Object.keys(types) as ColumnName<keyof C & string>[];
  }

  /** A row as the store returned it, typed as `RowOf`: its columns only (a statement may return more). */
  read(stored: Record<string, unknown>): RowOf<C> {
    const row: Record<string, unknown> = {};
    for (const name of this.names) {
      const read = this.reads[name];
      row[name] = read === undefined ? stored[name] : read(stored[name]);
    }
    return row as RowOf<C>;
  }

  /** The value of `column` of `row` as the store takes it. */
  write(row: RowOf<C>, column: string): unknown {
    const value = (row as Record<string, unknown>)[column];
    const write = this.writes[column];
    return write === undefined ? value : write(value);
  }

  /** The row as the store takes it, column by column. */
  stored(row: RowOf<C>): Record<string, unknown> {
    return Object.fromEntries(this.names.map((name) => [name, this.write(row, name)]));
  }
}
