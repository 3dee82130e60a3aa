import { rememberContext } from '../tracing/trace-context';
import { Columns, KeyedValueOf, RowOf, rowMapping } from './columns';
import { Database } from './database';
import { storeBatchPostgres } from './insert-once.postgres';
import { storeBatchSqlite } from './insert-once.sqlite';
import { keysetPageQueries } from './keyset-pages';
import {
  AnyTables,
  Inserted,
  InsertOnceTable,
  Keyed,
  Outcome,
  Removal,
  StoredTable,
  tableQueries,
  TableOnStore,
  Write,
} from './insert-once-table';
import { StoredColumns } from './stored-columns';
import { TurnBatcher } from './turn-batcher';

/** Writes per batch at most: bounds how long one SQLite commit holds the event loop, and one PostgreSQL statement's work. */
const MAX_BATCH = 500;

/**
 * The create rule of an int64-keyed resource whose key the client chooses: store the row, or, when its
 * id is stored, answer a replay if the stored row is the same and `conflict` (a 409) if not. Nothing is
 * overwritten, and the primary key settles concurrent creates, so it holds across instances. Deletes
 * too, each row's event published in the transaction that changed it. A write is a batch of one
 * without the group commit (`storeBatchSqlite`, `storeBatchPostgres`).
 */
export class InsertOnce<C extends Columns, Value extends Keyed = KeyedValueOf<C>> {
  private readonly on: TableOnStore<C, Value>;
  private readonly sqlite: boolean;
  private readonly batcher?: TurnBatcher<Write<Value>, Inserted<Value> | boolean>;
  private readonly pages: ReturnType<typeof keysetPageQueries>;

  constructor(database: Database, declared: InsertOnceTable<C, Value>) {
    // Without a mapping of its own, Value is ValueOf<C> (InsertOnceTable's type says so).
    const defaults = rowMapping(declared.columns);
    const toRow = declared.toRow ?? defaults.toRow;
    const table: StoredTable<C, Value> = {
      ...declared,
      toRow,
      fromRow: declared.fromRow ?? (defaults.fromRow as unknown as (row: RowOf<C>) => Value),
      same: declared.same ?? ((stored, value) => defaults.sameRow(toRow(stored), toRow(value))),
    };
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
