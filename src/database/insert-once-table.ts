import { Kysely } from 'kysely';
import { Database } from './database';
import { prepareQuery } from './prepared-query';
import { ColumnsOf, StoredColumns } from './stored-columns';
import { Transaction } from './transaction';

/** What InsertOnce stores: values and rows keyed by an int64 `id`. */
export type Keyed = { readonly id: bigint };

/** A resource's table, as `InsertOnce` stores it; `Row` is typed plainly (`count: number`), the same on both stores. */
export interface InsertOnceTable<Value extends Keyed, Row extends Keyed> {
  /** The value as a failure names it: "SQLite failed to store <what>" (`a plant`). */
  readonly what: string;
  readonly table: string;
  /** Every column, `id` (the int64 primary key) among them, with a PostgreSQL type that holds its field. */
  readonly columns: ColumnsOf<Row>;
  readonly toRow: (value: Value) => Row;
  readonly fromRow: (row: Row) => Value;
  /** Whether a create of `value` finding `stored` under its id is a replay (otherwise a conflict). */
  readonly same: (stored: Value, value: Value) => boolean;
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
export interface TableOnStore<Value extends Keyed, Row extends Keyed> {
  readonly database: Database;
  readonly table: InsertOnceTable<Value, Row>;
  readonly columns: StoredColumns<Row>;
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
