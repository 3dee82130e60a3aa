import { RawBuilder, sql } from 'kysely';
import { Database } from '../../database/database';

/**
 * The time columns of the webhook tables, where the queries written once meet the stores' two clocks:
 * SQLite's Unix ms of this one instance, given as values; PostgreSQL's `timestamptz` from the server's
 * clock, so instances with skewed clocks still agree on what is due and whose lease has run out.
 * Typed as numbers, as the tables declare times for the builder (`TimeColumn`).
 */
export interface StoreClock {
  /** Now, as a time column holds it. */
  now(): RawBuilder<number>;
  /** `ms` milliseconds from now (negative: ago). */
  fromNow(ms: number): RawBuilder<number>;
  /**
   * A time that is due now and differs from the one in `column`: now, or one tick of the clock
   * before `column` when that holds now or later (SQLite's tick is a millisecond), so a change of
   * schedule shows even within one tick.
   */
  dueNowUnlike(column: string): RawBuilder<number>;
  /** A Unix time in ms of this process (an attempt's start, a `since`), as a time column holds it. */
  at(ms: number): RawBuilder<number>;
  /** A time column (or expression) read as Unix ms: a bigint on SQLite, a float on PostgreSQL (see `msOf`). */
  ms(column: string | RawBuilder<unknown>): RawBuilder<number | bigint>;
  /**
   * A time column (or expression) as a cursor carries it between calls, exact: SQLite's Unix ms as they
   * are, PostgreSQL's `timestamptz` as its text (whole microseconds, which a float of ms would round).
   */
  key(expression: RawBuilder<unknown>): RawBuilder<string | number | bigint>;
  /** A time a cursor holds (`key`), back in SQL to compare with a time column. */
  fromKey(key: string): RawBuilder<number>;
}

const SQLITE_CLOCK: StoreClock = {
  now: () => sql.val(Date.now()),
  fromNow: (ms) => sql.val(Date.now() + ms),
  dueNowUnlike: (column) => {
    const now = Date.now();
    return sql<number>`CASE WHEN ${sql.ref(column)} < ${now} THEN ${now} ELSE ${sql.ref(column)} - 1 END`;
  },
  at: (ms) => sql.val(ms),
  ms: (column) => sql<number | bigint>`${typeof column === 'string' ? sql.ref(column) : column}`,
  key: (expression) => sql<bigint>`${expression}`,
  fromKey: (key) => sql<number>`${BigInt(key)}`,
};

const POSTGRES_CLOCK: StoreClock = {
  now: () => sql<number>`clock_timestamp()`,
  fromNow: (ms) => sql<number>`clock_timestamp() + ${ms}::float8 * interval '1 millisecond'`,
  dueNowUnlike: (column) =>
    sql<number>`CASE WHEN ${sql.ref(column)} < clock_timestamp() THEN clock_timestamp()
                     ELSE ${sql.ref(column)} - interval '1 microsecond' END`,
  at: (ms) => sql<number>`to_timestamp(${ms}::float8 / 1000.0)`,
  ms: (column) =>
    sql<number>`(extract(epoch FROM ${typeof column === 'string' ? sql.ref(column) : column}) * 1000)::float8`,
  key: (expression) => sql<string>`(${expression})::text`,
  fromKey: (key) => sql<number>`${key}::timestamptz`,
};

/** The clock of the store `database` is. */
export function storeClock(database: Pick<Database, 'kind'>): StoreClock {
  return database.kind === 'sqlite' ? SQLITE_CLOCK : POSTGRES_CLOCK;
}

/** A time read through `StoreClock.ms`, as whole Unix milliseconds. */
export function msOf(value: number | bigint): number {
  return Math.round(Number(value));
}
