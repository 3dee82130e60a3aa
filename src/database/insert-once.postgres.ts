import { sql } from 'kysely';
import { Keyed, Outcome, StoredRow, TableOnStore } from './insert-once';
import { fixedText } from './prepared-query';
import { NOTHING_ADDED } from './statement-addition';
import { StorageTimeoutError } from './storage-timeout.error';
import { StorageUnavailableError } from './storage-unavailable.error';
import { StorageError } from './storage.error';

const columnList = (names: readonly string[]) => sql.join(names.map((column) => sql.ref(column)));

/** Insert-then-read rounds for a key deleted between the two: each is a fresh race, lost only if it happens again. */
const MAX_VANISHED_ROUNDS = 10;

/**
 * PostgreSQL: the batch in one statement and one commit, each value resolved on its own. A lost connection
 * is retried once (the insert is idempotent); a timeout is not (the server took the batch, a retry would
 * wait as long again); any other failure splits the batch in halves, one after the other, so a row the
 * server refuses fails alone, at about 2·log2(n) statements on one connection, not n at once on the pool.
 */
export async function storeBatchPostgres<Value extends Keyed, Row extends Keyed>(
  on: TableOnStore<Value, Row>,
  values: readonly Value[],
): Promise<Outcome<Value>[]> {
  try {
    return await insertOrCompare(on, values).catch((error: unknown) => {
      if (!(error instanceof StorageUnavailableError) || error instanceof StorageTimeoutError) throw error;
      return insertOrCompare(on, values);
    });
  } catch (error) {
    // An unreachable or timed-out database would fail each half just the same.
    if (values.length > 1 && !(error instanceof StorageUnavailableError)) {
      const half = Math.ceil(values.length / 2);
      const first = await storeBatchPostgres(on, values.slice(0, half));
      return [...first, ...(await storeBatchPostgres(on, values.slice(half)))];
    }
    return values.map(() => error as Error);
  }
}

/**
 * One insert for the batch, then one read of the rows that were already there. A row deleted between
 * the two has cost its value nothing: it is tried again, and is created or meets what was stored since.
 */
async function insertOrCompare<Value extends Keyed, Row extends Keyed>(
  on: TableOnStore<Value, Row>,
  values: readonly Value[],
  round = 1,
): Promise<Outcome<Value>[]> {
  const { what, same, conflict } = on.table;
  const stored = new Map<bigint, Value>();
  const keep = (rows: StoredRow[]) => rows.map(on.fromStored).forEach((value) => stored.set(value.id, value));
  keep(await insertBatch(on, values));
  const created = new Set(stored.keys());
  const missing = values.filter((value) => !stored.has(value.id)).map((value) => value.id.toString());
  if (missing.length > 0) {
    // A separate statement on purpose: under READ COMMITTED it sees the rows a concurrent
    // transaction committed, which a CTE sharing the INSERT's snapshot would miss.
    const read = sql<StoredRow>`SELECT ${columnList(on.columns.names)} FROM ${sql.table(on.table.table)} WHERE id = ANY(${missing}::bigint[])`;
    const { rows } = await on.database.execute(`store ${what}`, read.compile(on.database.kysely));
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
  const retried = await insertOrCompare(on, vanished, round + 1);
  return results.map((result) => result ?? retried.shift()!);
}

/**
 * One autocommitted statement: `INSERT … SELECT FROM unnest(…)` (an array per column) as the CTE `inserted`,
 * then the events port's CTEs, which read it. Rows go in id order, so two batches with ids in common lock
 * them in the same order and cannot deadlock. Its text is fixed (the values are arrays): `fixedText`, a
 * prepared statement parsed and planned once per connection.
 */
async function insertBatch<Value extends Keyed, Row extends Keyed>(
  { database, table, columns }: TableOnStore<Value, Row>,
  values: readonly Value[],
): Promise<StoredRow[]> {
  // The values as they came (not rebuilt from the rows): each carries its request's trace context.
  const firsts = new Map<bigint, Value>();
  for (const value of values) if (!firsts.has(value.id)) firsts.set(value.id, value);
  const addition = table.events?.createdInStatement(sql.table('inserted'), [...firsts.values()]) ?? NOTHING_ADDED;
  const list = columnList(columns.names);
  const rows = values.map(table.toRow);
  const arrays = columns.names.map((column) => {
    const array = rows.map((row) => columns.write(row, column));
    return sql`${array}::${sql.raw(columns.types[column])}[]`;
  });
  const statement = sql<StoredRow & { events: unknown }>`
      WITH inserted AS (
        INSERT INTO ${sql.table(table.table)} (${list})
        SELECT ${list}
        FROM unnest(${sql.join(arrays)}) WITH ORDINALITY AS batch (${list}, position)
        ORDER BY id, position
        ON CONFLICT (id) DO NOTHING
        RETURNING ${list})
      ${addition.ctes}
      SELECT ${list}, ${addition.outcome} AS events FROM inserted`.compile(database.kysely);
  const { rows: inserted } = await database.execute(`store ${table.what}`, fixedText(statement));
  if (inserted.length > 0) addition.committed(inserted[0].events);
  return inserted;
}
