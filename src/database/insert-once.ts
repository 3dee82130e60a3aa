import { SpanKind, trace } from '@opentelemetry/api';
import { Kysely, RawBuilder, sql } from 'kysely';
import { contextOf, inSpan, rememberContext } from '../platform/trace-context';
import { Database } from './database';
import { fixedText, prepareQuery } from './prepared-query';
import { sqliteFailure } from './sqlite-errors';
import { NOTHING_ADDED, StatementAddition } from './statement-addition';
import { StorageTimeoutError } from './storage-timeout.error';
import { StorageUnavailableError } from './storage-unavailable.error';
import { StorageError } from './storage.error';
import { ColumnsOf, StoredColumns } from './stored-columns';
import { StatementResult, Transaction } from './transaction';
import { TurnBatcher } from './turn-batcher';

/**
 * A resource's table, as `InsertOnce` stores it. `Row` is typed plainly, the same on both stores
 * (`id: bigint; count: number; done: boolean; note: string | null`): `columns` says how each column
 * is stored, and what a store reads back differently (SQLite's integers as bigints and flags as 0/1,
 * PostgreSQL's int8 as text) is made the row's type before `fromRow` sees it.
 */
export interface InsertOnceTable<Value extends { readonly id: bigint }, Row extends { readonly id: bigint }> {
  /** The value as a failure names it: "SQLite failed to store <what>" (`a plant`). */
  readonly what: string;
  readonly table: string;
  /**
   * Every column with its PostgreSQL type (`ColumnType`), `id` (the int64 primary key) among them;
   * each must hold its field's type: `bigint`, `integer` or `double precision`, `text`, `boolean`, `timestamptz`.
   */
  readonly columns: ColumnsOf<Row>;
  readonly toRow: (value: Value) => Row;
  readonly fromRow: (row: Row) => Value;
  /** Whether a create of `value` finding `stored` under its id is a replay (otherwise a conflict). */
  readonly same: (stored: Value, value: Value) => boolean;
  /** The error of a create whose id holds other content (a 409). */
  readonly conflict: (value: Value) => Error;
  /** The feature's events port: what commits with each new row (never for a replay or a conflict). */
  readonly events?: CreatedEventsPort<Value>;
  /**
   * The one option: group commit, for a write path the bench shows is hot. The creates (and, on
   * SQLite, the deletes) that arrive together share one transaction: on SQLite one `BEGIN IMMEDIATE`
   * and one fsync for the writes gathered over the event loop's turns, in the order they came; on
   * PostgreSQL one statement for the creates of a turn. Without it each create is a batch of one.
   */
  readonly groupCommit?: boolean;
}

/** What a create did: stored `value`, or found the same one stored (`created: false`). */
export interface Inserted<Value> {
  readonly value: Value;
  readonly created: boolean;
}

/** The shape of a feature's events port (`CreatedEvents` in common/events, which implements it). */
export interface CreatedEventsPort<Created> {
  created(transaction: Transaction, rows: readonly Created[]): void | Promise<void>;
  committed(transaction: Transaction): void;
  createdInStatement(inserted: RawBuilder<unknown>, rows: readonly Created[]): StatementAddition;
}

/** Any table of any resource, for queries built from its description. */
type AnyTables = Record<string, Record<string, unknown>>;
/** A row as a driver returns it, before `StoredColumns.read`. */
type StoredRow = Record<string, unknown>;

/** A write of a batch: a create, or (SQLite's group commit) a delete. */
type Write<Value> = { readonly create: Value } | { readonly remove: bigint };
/** A create's result, a delete's "was there a row", or the error of that write alone. */
type Outcome<Value> = Inserted<Value> | boolean | Error;

/** Writes per batch at most: bounds how long one SQLite commit holds the event loop, and one PostgreSQL statement's work. */
const MAX_BATCH = 500;
/**
 * Rounds of insert-then-read on PostgreSQL for a key whose row is deleted between the two: each
 * round is a fresh race that the create loses only if another create and delete slip in between again.
 */
const MAX_VANISHED_ROUNDS = 10;

/**
 * The create rule of an int64-keyed resource whose key the client chooses, on either store: store
 * the row, or, when its id is already stored, answer a replay if the stored row is the same and
 * the resource's conflict error (a 409) if not. Nothing is ever overwritten, and the database
 * settles concurrent creates of one id (its primary key), so it holds across instances. New rows
 * commit with what the events port adds. Also the resource's read by id, and its delete.
 *
 * One code path, a create being a batch of one; the stores differ in one method each:
 * `storeBatchSqlite` (one transaction) and `storeBatchPostgres` (one autocommitted statement).
 */
export class InsertOnce<Value extends { readonly id: bigint }, Row extends { readonly id: bigint }> {
  private readonly queries: ReturnType<typeof tableQueries>;
  private readonly columns: StoredColumns<Row>;
  private readonly batcher?: TurnBatcher<Write<Value>, Inserted<Value> | boolean>;
  private readonly sqlite: boolean;

  constructor(
    private readonly database: Database,
    private readonly table: InsertOnceTable<Value, Row>,
  ) {
    this.columns = new StoredColumns(database.kind, table.columns);
    this.queries = tableQueries(database.kysely.$extendTables<AnyTables>(), table.table, this.columns.names);
    this.sqlite = database.kind === 'sqlite';
    if (table.groupCommit) {
      // SQLite gathers until a turn brings nothing new: each commit blocks the loop for an fsync, so the
      // fewer commits per write, the more writes per second (see TurnBatcher's `untilQuiet`).
      this.batcher = new TurnBatcher((writes) => this.storeBatch(writes), MAX_BATCH, { untilQuiet: this.sqlite });
    }
  }

  /** Stores `value` once (see the class); rejects with `conflict(value)` when its id holds other content. */
  create(value: Value): Promise<Inserted<Value>> {
    rememberContext(value); // a group commit's span links to each create's trace
    return this.write({ create: value }) as Promise<Inserted<Value>>;
  }

  async get(id: bigint): Promise<Value | undefined> {
    const { rows } = await this.database.execute(`read ${this.table.what}`, this.queries.byId({ id }));
    return rows.length === 0 ? undefined : this.valueOf(rows[0]);
  }

  /**
   * The value of a row of this table as the store returned it, from a query of the feature's own
   * (a page, say): its columns made the row's types (`columns`), then `fromRow`.
   */
  valueOf(stored: StoredRow): Value {
    return this.table.fromRow(this.columns.read(stored));
  }

  /**
   * Removes the row of `id`; resolves whether there was one. In SQLite's group commit, in its batch
   * in the order it came; otherwise one statement, not retried after a lost connection (a delete
   * that committed would then answer "not found").
   */
  async delete(id: bigint): Promise<boolean> {
    if (this.batcher !== undefined && this.sqlite) return (await this.batcher.submit({ remove: id })) as boolean;
    const { affectedRows } = await this.database.execute(`delete ${this.table.what}`, this.queries.remove({ id }));
    return affectedRows === 1;
  }

  /** Waits for the batches in flight; the database module closes the store after this. */
  async idle(): Promise<void> {
    await this.batcher?.idle();
  }

  private async write(write: Write<Value>): Promise<Inserted<Value> | boolean> {
    if (this.batcher !== undefined) return this.batcher.submit(write);
    const [outcome] = await this.storeBatch([write]);
    if (outcome instanceof Error) throw outcome;
    return outcome;
  }

  private storeBatch(writes: readonly Write<Value>[]): Promise<Outcome<Value>[]> {
    if (this.sqlite) return this.storeBatchSqlite(writes);
    return this.storeBatchPostgres(writes.map((write) => (write as { readonly create: Value }).create));
  }

  // SQLite ------------------------------------------------------------------------------------

  /**
   * SQLite: the batch's writes in one `BEGIN IMMEDIATE` transaction (`Database.transaction`: a busy
   * file is tried again off the event loop for `BUSY_WAIT_MS`), run synchronously with one commit, so
   * one fsync. When the file cannot be written (still busy, disk full or failing), every write fails
   * at once with a 503; any other failure is taken to be one write's own, and each runs alone so that
   * only it fails.
   */
  private async storeBatchSqlite(writes: readonly Write<Value>[]): Promise<Outcome<Value>[]> {
    const { what, events, groupCommit } = this.table;
    // One span for the transaction, in the trace of its first create, linked to the others'.
    const traced = writes.flatMap((write) => {
      const remembered = 'create' in write ? contextOf(write.create) : undefined;
      return remembered === undefined ? [] : [remembered];
    });
    let done: { outcomes: Outcome<Value>[]; committed?: Transaction };
    try {
      done = await inSpan(
        groupCommit ? 'sqlite group commit' : `sqlite store ${what}`,
        {
          kind: SpanKind.CLIENT,
          attributes: { 'db.system': 'sqlite', 'db.operation': 'transaction', 'plant_store.batch_size': writes.length },
          links: traced.slice(1).flatMap((other) => {
            const span = trace.getSpan(other);
            return span === undefined ? [] : [{ context: span.spanContext() }];
          }),
        },
        traced[0],
        () => this.database.transaction(`store ${what}`, (tx) => this.applySqlite(tx, writes)),
      );
    } catch (error) {
      if (writes.length === 1 || error instanceof StorageUnavailableError) {
        // The driver's error (a port error's cause), or what the events port threw.
        const cause = error instanceof StorageError || error instanceof StorageUnavailableError ? error.cause : error;
        const failed = (write: Write<Value>) => `SQLite failed to ${'create' in write ? 'store' : 'delete'} ${what}`;
        return writes.map((write) => sqliteFailure(failed(write), cause));
      }
      const alone: Outcome<Value>[] = [];
      for (const write of writes) alone.push(...(await this.storeBatchSqlite([write])));
      return alone;
    }
    if (done.committed !== undefined) events?.committed(done.committed);
    return done.outcomes;
  }

  /**
   * The writes inside the transaction, synchronously: each insert, the read of a row that was already
   * there, and what commits with the new rows (the events port), so no other connection can come
   * between an insert and its read, and an event exists exactly when its row was inserted.
   */
  private applySqlite(
    tx: Transaction,
    writes: readonly Write<Value>[],
  ): { outcomes: Outcome<Value>[]; committed?: Transaction } {
    const run = <R>(query: Parameters<Transaction['execute']>[0]) => tx.execute(query) as StatementResult<R>;
    const { toRow, same, conflict, events } = this.table;
    const inserted: Value[] = [];
    const outcomes = writes.map((write): Outcome<Value> => {
      if ('remove' in write) return run(this.queries.remove({ id: write.remove })).affectedRows === 1;
      const value = write.create;
      if (run(this.queries.insert(this.columns.stored(toRow(value)))).affectedRows === 1) {
        inserted.push(value);
        return { value, created: true };
      }
      const stored = this.valueOf(run<StoredRow>(this.queries.byId({ id: value.id })).rows[0]);
      return same(stored, value) ? { value: stored, created: false } : conflict(value);
    });
    if (inserted.length === 0 || events === undefined) return { outcomes };
    // A promise here would finish after the commit: the port's contract forbids it on SQLite.
    if (events.created(tx, inserted) instanceof Promise) {
      throw new Error('An events port must record synchronously in an SQLite transaction');
    }
    return { outcomes, committed: tx };
  }

  // PostgreSQL --------------------------------------------------------------------------------

  /**
   * PostgreSQL: the batch in one statement and one commit, each value resolved on its own (a
   * conflict fails only its value). A lost connection is retried once (the insert is idempotent);
   * a timeout is not (the server took the batch, and a retry would wait as long again); any other
   * failure splits the batch in halves, tried one after the other, so one row the server refuses
   * does not fail the others, and a failed batch of 500 costs about 2·log2(500) statements on one
   * connection at a time, never 500 transactions at once on the pool.
   */
  private async storeBatchPostgres(values: readonly Value[]): Promise<Outcome<Value>[]> {
    try {
      try {
        return await this.insertOrComparePostgres(values);
      } catch (error) {
        if (!(error instanceof StorageUnavailableError) || error instanceof StorageTimeoutError) throw error;
      }
      return await this.insertOrComparePostgres(values);
    } catch (error) {
      // An unreachable or timed-out database would fail each half just the same.
      if (values.length > 1 && !(error instanceof StorageUnavailableError)) {
        const half = Math.ceil(values.length / 2);
        const first = await this.storeBatchPostgres(values.slice(0, half));
        return [...first, ...(await this.storeBatchPostgres(values.slice(half)))];
      }
      return values.map(() => error as Error);
    }
  }

  /**
   * One insert for the batch, then one read of the rows that were already there. A row the insert
   * saw can be deleted before the read (a concurrent DELETE): that value has lost nothing, it is
   * simply tried again, and becomes a new create or meets whatever was stored since.
   */
  private async insertOrComparePostgres(values: readonly Value[], round = 1): Promise<Outcome<Value>[]> {
    const { what, same, conflict } = this.table;
    const stored = new Map<bigint, Value>();
    const keep = (row: StoredRow) => {
      const value = this.valueOf(row);
      stored.set(value.id, value);
    };
    for (const row of await this.insertBatchPostgres(values)) keep(row);
    const created = new Set(stored.keys());
    const missing = values.filter((value) => !stored.has(value.id)).map((value) => value.id.toString());
    if (missing.length > 0) {
      // A separate statement on purpose: under READ COMMITTED it sees the rows a concurrent
      // transaction committed, which a CTE sharing the INSERT's snapshot would miss.
      const read = sql<StoredRow>`SELECT ${this.list()} FROM ${sql.table(this.table.table)} WHERE id = ANY(${missing}::bigint[])`;
      const { rows } = await this.database.execute(`store ${what}`, read.compile(this.database.kysely));
      for (const row of rows) keep(row);
    }
    const results: (Outcome<Value> | undefined)[] = values.map((value) => {
      const existing = stored.get(value.id);
      if (existing === undefined) return undefined; // deleted between the insert and the read
      if (!same(existing, value)) return conflict(value);
      // The same id twice in one batch: the first is the one created, the next a replay.
      return { value: existing, created: created.delete(value.id) };
    });
    const vanished = values.filter((_value, i) => results[i] === undefined);
    if (vanished.length === 0) return results as Outcome<Value>[];
    if (round >= MAX_VANISHED_ROUNDS) {
      const failure = new StorageError(`PostgreSQL failed to store ${what}`, {
        cause: new Error(`rows kept vanishing for ${round} rounds`),
      });
      return results.map((result) => result ?? failure);
    }
    const retried = await this.insertOrComparePostgres(vanished, round + 1);
    return results.map((result) => result ?? retried.shift()!);
  }

  /**
   * The batch insert: one autocommitted statement, one round trip, whatever the batch: an `INSERT …
   * SELECT FROM unnest(…)` (one array parameter per column whatever its size) as the CTE `inserted`,
   * followed by what must commit with the new rows (the events port's `createdInStatement` CTEs, which
   * read `inserted`). Rows go in id order, so two batches with ids in common (two instances, say)
   * take their locks in the same order and cannot deadlock; within one id, in the order they came.
   * Its text is fixed for the process's wiring (the values are the arrays), so it is marked
   * `fixedText` and runs as a named prepared statement: parsed and planned once per connection.
   */
  private async insertBatchPostgres(values: readonly Value[]): Promise<StoredRow[]> {
    const { table, toRow, events, what } = this.table;
    // The values as they came (not rebuilt from the rows): each carries its request's trace context.
    const firsts = new Map<bigint, Value>();
    for (const value of values) if (!firsts.has(value.id)) firsts.set(value.id, value);
    const addition = events?.createdInStatement(sql.table('inserted'), [...firsts.values()]) ?? NOTHING_ADDED;
    const rows = values.map(toRow);
    const arrays = this.columns.names.map((column) => {
      const array = rows.map((row) => this.columns.write(row, column));
      return sql`${array}::${sql.raw(this.columns.types[column])}[]`;
    });
    const statement = sql<StoredRow & { events: unknown }>`
      WITH inserted AS (
        INSERT INTO ${sql.table(table)} (${this.list()})
        SELECT ${this.list()}
        FROM unnest(${sql.join(arrays)}) WITH ORDINALITY AS batch (${this.list()}, position)
        ORDER BY id, position
        ON CONFLICT (id) DO NOTHING
        RETURNING ${this.list()})
      ${addition.ctes}
      SELECT ${this.list()}, ${addition.outcome} AS events FROM inserted`.compile(this.database.kysely);
    const { rows: inserted } = await this.database.execute(`store ${what}`, fixedText(statement));
    if (inserted.length > 0) addition.committed(inserted[0].events);
    return inserted;
  }

  private list(): RawBuilder<unknown> {
    return sql.join(this.columns.names.map((column) => sql.ref(column)));
  }
}

/**
 * The per-row statements, built once with the query builder and compiled once each
 * (`prepareQuery`): SQLite's insert of one row, the read by id, the delete.
 */
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
    remove: prepareQuery<{ id: bigint }, never>(({ id }) => db.deleteFrom(table).where('id', '=', id).compile()),
  };
}
