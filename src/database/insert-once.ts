import { Kysely } from 'kysely';
import { rememberContext } from '../platform/trace-context';
import { Database } from './database';
import { storeBatchPostgres } from './insert-once.postgres';
import { storeBatchSqlite } from './insert-once.sqlite';
import { keysetPageQueries } from './keyset-pages';
import { prepareQuery } from './prepared-query';
import { ColumnsOf, StoredColumns } from './stored-columns';
import { Transaction } from './transaction';
import { TurnBatcher } from './turn-batcher';

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

/** Writes per batch at most: bounds how long one SQLite commit holds the event loop, and one PostgreSQL statement's work. */
const MAX_BATCH = 500;

/**
 * The create rule of an int64-keyed resource whose key the client chooses: store the row, or, when its
 * id is stored, answer a replay if the stored row is the same and `conflict` (a 409) if not. Nothing is
 * overwritten, and the primary key settles concurrent creates, so it holds across instances. Deletes
 * too, each row's event published in the transaction that changed it. A write is a batch of one
 * without the group commit (`storeBatchSqlite`, `storeBatchPostgres`).
 */
export class InsertOnce<Value extends Keyed, Row extends Keyed> {
  private readonly on: TableOnStore<Value, Row>;
  private readonly sqlite: boolean;
  private readonly batcher?: TurnBatcher<Write<Value>, Inserted<Value> | boolean>;
  private readonly pages: ReturnType<typeof keysetPageQueries>;

  constructor(database: Database, table: InsertOnceTable<Value, Row>) {
    const columns = new StoredColumns(database.kind, table.columns);
    const queries = tableQueries(database.kysely.$extendTables<AnyTables>(), table.table, columns.names);
    this.on = { database, table, columns, queries, fromStored: (stored) => table.fromRow(columns.read(stored)) };
    this.sqlite = database.kind === 'sqlite';
    this.pages = keysetPageQueries(database.kysely, table.table, columns.names);
    if (table.groupCommit) {
      // SQLite gathers until a turn brings nothing new: each commit blocks the loop for an fsync.
      this.batcher = new TurnBatcher((writes) => this.storeBatch(writes), MAX_BATCH, { untilQuiet: this.sqlite });
    }
  }

  /** Stores `value` once (see the class); rejects with `conflict(value)` when its id holds other content. */
  async create(value: Value): Promise<Inserted<Value>> {
    rememberContext(value); // a group commit's span links to each create's trace
    if (this.batcher !== undefined) return (await this.batcher.submit({ create: value })) as Inserted<Value>;
    const [outcome] = await this.storeBatch([{ create: value }]);
    if (outcome instanceof Error) throw outcome;
    return outcome as Inserted<Value>;
  }

  async get(id: bigint): Promise<Value | undefined> {
    const { rows } = await this.on.database.execute(`read ${this.on.table.what}`, this.on.queries.byId({ id }));
    return rows.length === 0 ? undefined : this.on.fromStored(rows[0]);
  }

  /**
   * One keyset page in id order (signed): at most `limit` values whose id is greater than `after`, from
   * the smallest without it. A row deleted meanwhile may be missed, never one listed twice.
   */
  async page(limit: number, after?: bigint): Promise<Value[]> {
    const query = after === undefined ? this.pages.first({ limit }) : this.pages.after({ after, limit });
    const { rows } = await this.on.database.execute(`read ${this.on.table.table}`, query);
    return rows.map(this.on.fromStored);
  }

  /**
   * Whether a row was removed, committed with its `deleted` event: of concurrent deletes of one id, one
   * finds it. Not retried after a lost connection (a committed delete would then say "not found").
   */
  async delete(id: bigint): Promise<boolean> {
    const removal: Removal = { remove: id };
    rememberContext(removal); // the deleted row's event joins its request's trace
    if (this.batcher !== undefined) return (await this.batcher.submit(removal)) as boolean;
    const [outcome] = await this.storeBatch([removal]);
    if (outcome instanceof Error) throw outcome;
    return outcome as boolean;
  }

  /** Waits for the batches in flight, before the database module closes the store. */
  async idle(): Promise<void> {
    await this.batcher?.idle();
  }

  private storeBatch(writes: readonly Write<Value>[]): Promise<Outcome<Value>[]> {
    return this.sqlite ? storeBatchSqlite(this.on, writes) : storeBatchPostgres(this.on, writes);
  }
}

type AnyTables = Record<string, Record<string, unknown>>;

/** The per-row statements, each compiled once: SQLite's insert and delete of one row, the read by id. */
function tableQueries(db: Kysely<AnyTables>, table: string, columns: readonly string[]) {
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
