import { RawBuilder, sql } from 'kysely';
import { SqlDialect } from '../../database/sql-dialect';

/**
 * The time columns of the webhook tables, as each store keeps them (see `webhooks.tables.ts`): the
 * one place where the queries written once meet the stores' two clocks.
 *
 * - SQLite: Unix milliseconds of this one instance's clock, given as values.
 * - PostgreSQL: `timestamptz` from the server's clock (`clock_timestamp()`), so instances with
 *   skewed clocks still agree on what is due and whose lease has run out.
 */
export interface StoreClock {
  // Typed as numbers, as the tables declare times for the builder (`TimeColumn`).
  /** Now, as a time column holds it. */
  now(): RawBuilder<number>;
  /** `ms` milliseconds from now (negative: ago). */
  fromNow(ms: number): RawBuilder<number>;
  /** A Unix time in ms of this process (an attempt's start, a `since`), as a time column holds it. */
  at(ms: number): RawBuilder<number>;
  /** A time column (or expression) read as Unix ms: a bigint on SQLite, a float on PostgreSQL (`msOf` makes it a number). */
  ms(column: string | RawBuilder<unknown>): RawBuilder<number | bigint>;
}

const SQLITE_CLOCK: StoreClock = {
  now: () => sql.val(Date.now()),
  fromNow: (ms) => sql.val(Date.now() + ms),
  at: (ms) => sql.val(ms),
  ms: (column) => sql<number | bigint>`${typeof column === 'string' ? sql.ref(column) : column}`,
};

const POSTGRES_CLOCK: StoreClock = {
  now: () => sql<number>`clock_timestamp()`,
  fromNow: (ms) => sql<number>`clock_timestamp() + ${ms}::float8 * interval '1 millisecond'`,
  at: (ms) => sql<number>`to_timestamp(${ms}::float8 / 1000.0)`,
  ms: (column) =>
    sql<number>`(extract(epoch FROM ${typeof column === 'string' ? sql.ref(column) : column}) * 1000)::float8`,
};

/** The clock of the store `dialect` speaks. */
export function storeClock(dialect: SqlDialect): StoreClock {
  return dialect.choose({ sqlite: () => SQLITE_CLOCK, postgres: () => POSTGRES_CLOCK });
}

/** A time read through `StoreClock.ms`, as whole Unix milliseconds. */
export function msOf(value: number | bigint): number {
  return Math.round(Number(value));
}
