import { Kysely } from 'kysely';
import { Database } from './database';
import { prepareQuery } from './prepared-query';
import { Columns, KeyedValueOf, RowOf, ValueOf } from './columns';
import { StoredColumns } from './stored-columns';
import { Transaction } from './transaction';

/** What InsertOnce stores: values and rows keyed by an int64 `id`. */
export type Keyed = { readonly id: bigint };

/**
 * A resource's table, as `InsertOnce` stores it, from its one declaration of columns (`columns.ts`):
 * the row is `RowOf` it; the value `ValueOf` it unless the table maps its own (`toRow` and `fromRow`
 * then required).
 */
export type InsertOnceTable<C extends Columns, Value extends Keyed = KeyedValueOf<C>> = TableRules<C, Value> &
  ([Value] extends [ValueOf<C>]
    ? [ValueOf<C>] extends [Value]
      ? Partial<RowMapping<C, Value>>
      : RowMapping<C, Value>
    : RowMapping<C, Value>);

/** How a value becomes its row and back: by default each field in its column, absent as NULL. */
export interface RowMapping<C extends Columns, Value> {
  readonly toRow: (value: Value) => RowOf<C>;
  readonly fromRow: (row: RowOf<C>) => Value;
}

interface TableRules<C extends Columns, Value extends Keyed> {
  /** The value as a failure names it: "SQLite failed to store <what>" (`a plant`). */
  readonly what: string;
  readonly table: string;
  /** Every column, `id` (the int64 primary key) among them: `{ id: column.int64(), name: column.text(), … }`. */
  readonly columns: C;
  /** Whether a create of `value` finding `stored` under its id is a replay (otherwise a conflict); by default, every field the same. */
  readonly same?: (stored: Value, value: Value) => boolean;
  /** The error of a create whose id holds other content (a 409). */
  readonly conflict: (value: Value) => Error;
  /** The feature's port of its created event: each new row, in the transaction that stored it (never a replay or a conflict). */
  readonly created?: EventsPort<Value>;
  /** The feature's port of its deleted event: each deleted row as it was stored, in the transaction that deleted it. */
  readonly deleted?: EventsPort<Value>;
  /**
   * Group commit, for a write path the bench shows is hot: SQLite's creates and deletes gathered over the
   * event loop's turns share one `BEGIN IMMEDIATE` and fsync, in order; PostgreSQL's creates of a turn
   * one transaction, and its deletes another.
   */
  readonly groupCommit?: boolean;
}

/** A table with its defaults filled in: what each store's batch works with. */
export type StoredTable<C extends Columns, Value extends Keyed> = Omit<TableRules<C, Value>, 'same'> &
  RowMapping<C, Value> & { readonly same: (stored: Value, value: Value) => boolean };

/** What a create did: stored `value`, or found the same one stored (`created: false`). */
export interface Inserted<Value> {
  readonly value: Value;
  readonly created: boolean;
}

/** The shape of a feature's events port (`Events` in events/, which implements it). */
export interface EventsPort<Item> {
  publish(tx: Transaction, items: readonly Item[]): Promise<void>;
}

/** A row as a driver returns it, before `StoredColumns.read`. */
export type StoredRow = Record<string, unknown>;
/** A delete of a batch: its own object, which carries its request's trace context to its event. */
export type Removal = { readonly remove: bigint };
/** A write of a batch: a create or a delete. */
export type Write<Value> = { readonly create: Value } | Removal;
/** A create's result, a delete's "was there a row", or the error of that write alone. */
export type Outcome<Value> = Inserted<Value> | boolean | Error;

/** The table on this process's store: what each store's batch works with. */
export interface TableOnStore<C extends Columns, Value extends Keyed> {
  readonly database: Database;
  readonly table: StoredTable<C, Value>;
  readonly columns: StoredColumns<C>;
  readonly queries: ReturnType<typeof tableQueries>;
  readonly fromStored: (stored: StoredRow) => Value;
}

export type AnyTables = Record<string, Record<string, unknown>>;

/** The per-row statements, each compiled once: SQLite's insert and delete of one row, the read by id. */
export function tableQueries(db: Kysely<AnyTables>, table: string, columns: readonly string[]) {
  return {
    insert: prepareQuery<Record<string, unknown>, never>((row) =>
      db
        .insertInto(table)
        .values(Object.fromEntries(columns.map((column) => [column, row[column]])))
        .onConflict((conflict) => conflict.column('id').doNothing())
        .compile(),
    ),
    byId: prepareQuery<{ id: bigint }, StoredRow>(({ id }) =>
      db.selectFrom(table).select(columns).where('id', '=', id).compile(),
    ),
    remove: prepareQuery<{ id: bigint }, StoredRow>(({ id }) =>
      db.deleteFrom(table).where('id', '=', id).returning(columns).compile(),
    ),
  };
}
