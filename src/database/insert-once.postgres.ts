import { CompiledQuery, sql } from 'kysely';
import { passContext } from '../tracing/trace-context';
import { Inserted, Keyed, Outcome, Removal, StoredRow, TableOnStore, Write } from './insert-once-table';
import { Columns } from './columns';
import { PostgresDatabase } from './postgres-database';
import { fixedText } from './prepared-query';
import { StorageTimeoutError } from './storage-timeout.error';
import { StorageUnavailableError } from './storage-unavailable.error';
import { StorageError } from './storage.error';
import { Transaction } from './transaction';

const columnList = (names: readonly string[]) => sql.join(names.map((column) => sql.ref(column)));

/** Insert-then-read rounds for a key deleted between the two: each is a fresh race, lost only if it happens again. */
const MAX_VANISHED_ROUNDS = 10;

/**
 * PostgreSQL: the batch's creates in one statement with their events when all are new, else in one
 * transaction (`BEGIN`, one insert for all, the read of those already stored, their events, `COMMIT`),
 * and its deletes in a transaction, at once, each write resolved on
 * its own. A failure is handled per transaction: a lost connection is retried once for creates (the
 * insert is idempotent), never for deletes (a retry of one that committed would say "not found"); a
 * timeout is not (the server took the batch, a retry would wait as long again); any other failure splits
 * the writes in halves, one after the other, so a row the server refuses fails alone, at about
 * 2·log2(n) transactions on one connection, not n at once on the pool.
 */
export async function storeBatchPostgres<C extends Columns, Value extends Keyed>(
  on: TableOnStore<C, Value>,
  writes: readonly Write<Value>[],
): Promise<Outcome<Value>[]> {
  const creates = writes.flatMap((write) => ('create' in write ? [write.create] : []));
  const removals = writes.filter((write): write is Removal => 'remove' in write);
  const [created, removed] = await Promise.all([
    creates.length === 0 ? [] : inHalves(creates, (values) => createOnce(on, values)),
    removals.length === 0 ? [] : inHalves(removals, (batch) => deleteOnce(on, batch)),
  ]);
  return writes.map((write) => ('create' in write ? created.shift()! : removed.shift()!));
}

/** `run` on `items`; on a failure other than an unreachable or timed-out store (which would fail each half as well), on each half. */
async function inHalves<Item, Result>(
  items: readonly Item[],
  run: (items: readonly Item[]) => Promise<Result[]>,
): Promise<(Result | Error)[]> {
  try {
    return await run(items);
  } catch (error) {
    if (items.length > 1 && !(error instanceof StorageUnavailableError)) {
      const half = Math.ceil(items.length / 2);
      const first = await inHalves(items.slice(0, half), run);
      return [...first, ...(await inHalves(items.slice(half), run))];
    }
    return items.map(() => error as Error);
  }
}

/**
 * The creates with the events of the rows they stored; tried once more after a lost connection. With
 * events and distinct ids, first as one statement (`writeInOneStatement`), which stores the batch only
 * if every row is new; else, or when some row was there already, in a transaction that reads what is
 * stored.
 */
async function createOnce<C extends Columns, Value extends Keyed>(
  on: TableOnStore<C, Value>,
  values: readonly Value[],
): Promise<Outcome<Value>[]> {
  const { database, table } = on;
  const { created: events } = table;
  // An id twice in the batch (a client's retry within one turn) is never all new: straight to the transaction.
  const inOneStatement = async () =>
    events !== undefined &&
    database instanceof PostgresDatabase &&
    new Set(values.map((value) => value.id)).size === values.length &&
    database.writeInOneStatement(`store ${table.what}`, insertStatement(on, values), values.length, (tx) =>
      events.publish(tx, values),
    );
  const inTransaction = () =>
    database.transaction(`store ${table.what}`, async (tx) => {
      const outcomes = await insertOrCompare(on, tx, values);
      // The values as they came (not rebuilt from the rows): each carries its request's trace context.
      const created = values.filter((_value, i) => (outcomes[i] as Inserted<Value>).created === true);
      if (created.length > 0) await events?.publish(tx, created);
      return outcomes;
    });
  const store = async (): Promise<Outcome<Value>[]> =>
    (await inOneStatement()) ? values.map((value) => ({ value, created: true })) : inTransaction();
  return store().catch((error: unknown) => {
    if (!(error instanceof StorageUnavailableError) || error instanceof StorageTimeoutError) throw error;
    return store();
  });
}

/**
 * One insert for the batch, then one read of the rows that were already there, in the transaction. A
 * row deleted between the two has cost its value nothing: it is tried again, and is created or meets
 * what was stored since.
 */
async function insertOrCompare<C extends Columns, Value extends Keyed>(
  on: TableOnStore<C, Value>,
  tx: Transaction,
  values: readonly Value[],
  round = 1,
): Promise<Outcome<Value>[]> {
  const { what, same, conflict } = on.table;
  const stored = new Map<bigint, Value>();
  const keep = (rows: StoredRow[]) => rows.map(on.fromStored).forEach((value) => stored.set(value.id, value));
  keep(await insertBatch(on, tx, values));
  const created = new Set(stored.keys());
  const missing = values.filter((value) => !stored.has(value.id)).map((value) => value.id.toString());
  if (missing.length > 0) {
    // A statement of its own on purpose: under READ COMMITTED it takes a new snapshot, which sees the
    // rows a concurrent transaction committed after the insert's.
    const read = sql<StoredRow>`SELECT ${columnList(on.columns.names)} FROM ${sql.table(on.table.table)} WHERE id = ANY(${missing}::bigint[])`;
    const { rows } = await tx.execute(read.compile(on.database.kysely));
    keep(rows);
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
    const cause = new Error(`rows kept vanishing for ${round} rounds`);
    const failure = new StorageError(`PostgreSQL failed to store ${what}`, { cause });
    return results.map((result) => result ?? failure);
  }
  const retried = await insertOrCompare(on, tx, vanished, round + 1);
  return results.map((result) => result ?? retried.shift()!);
}

/** The batch's insert (`insertStatement`) in `tx`: the rows it stored. */
async function insertBatch<C extends Columns, Value extends Keyed>(
  on: TableOnStore<C, Value>,
  tx: Transaction,
  values: readonly Value[],
): Promise<StoredRow[]> {
  return (await tx.execute(insertStatement(on, values))).rows;
}

/**
 * `INSERT … SELECT FROM unnest(…)` (an array per column), returning the rows it stored. Rows go in id
 * order, so two batches with ids in common lock them in the same order and cannot deadlock. Its text is
 * fixed (the values are arrays): `fixedText`, a prepared statement parsed and planned once per connection.
 */
function insertStatement<C extends Columns, Value extends Keyed>(
  { database, table, columns }: TableOnStore<C, Value>,
  values: readonly Value[],
): CompiledQuery<StoredRow> {
  const list = columnList(columns.names);
  const rows = values.map(table.toRow);
  const arrays = columns.names.map((column) => {
    const array = rows.map((row) => columns.write(row, column));
    return sql`${array}::${sql.raw(columns.types[column])}[]`;
  });
  const statement = sql<StoredRow>`
      INSERT INTO ${sql.table(table.table)} (${list})
      SELECT ${list}
      FROM unnest(${sql.join(arrays)}) WITH ORDINALITY AS batch (${list}, position)
      ORDER BY id, position
      ON CONFLICT (id) DO NOTHING
      RETURNING ${list}`.compile(database.kysely);
  return fixedText(statement);
}

/**
 * The deletes in one transaction: one statement removes every row the batch names, locked first in id
 * order (as inserts take them, so no two batches wait on each other in a circle), and returns them as
 * they were stored; then their events. Of one id named twice, the first is answered with the row.
 */
async function deleteOnce<C extends Columns, Value extends Keyed>(
  { database, table, columns, fromStored }: TableOnStore<C, Value>,
  removals: readonly Removal[],
): Promise<boolean[]> {
  const ids = [...new Set(removals.map((removal) => removal.remove.toString()))];
  const statement = sql<StoredRow>`
      WITH doomed AS (
        SELECT id FROM ${sql.table(table.table)} WHERE id = ANY(${ids}::bigint[]) ORDER BY id FOR UPDATE)
      DELETE FROM ${sql.table(table.table)} AS t USING doomed WHERE t.id = doomed.id
      RETURNING ${sql.join(columns.names.map((column) => sql.ref(`t.${column}`)))}`.compile(database.kysely);
  return database.transaction(`delete ${table.what}`, async (tx) => {
    const { rows } = await tx.execute(fixedText(statement));
    const gone = new Map(rows.map((row) => fromStored(row)).map((value) => [value.id, value]));
    const deleted: Value[] = [];
    const outcomes = removals.map((removal) => {
      const value = gone.get(removal.remove);
      if (value === undefined) return false;
      gone.delete(removal.remove);
      deleted.push(passContext(removal, value));
      return true;
    });
    if (deleted.length > 0) await table.deleted?.publish(tx, deleted);
    return outcomes;
  });
}
