import { RawBuilder, sql } from 'kysely';

/**
 * What a port adds to another feature's write on PostgreSQL, so that both commit as one autocommitted
 * statement: one round trip, no BEGIN and COMMIT around it. The statement is `WITH <its own CTEs>
 * <ctes> SELECT …, <outcome> FROM …`: the addition's common table expressions read the relation the
 * statement hands them (the rows it wrote) and write their own tables; `outcome` comes back once the
 * statement committed. All of it runs on one snapshot, taken after the statement's table locks
 * (which its parse takes, on every table it writes, whether it writes a row there or not).
 *
 * SQLite has no data-modifying CTEs: there a port adds statements to the `Transaction` instead.
 */
export interface StatementAddition {
  /** `, name AS (…)` for each CTE, appended to the statement's `WITH`; empty when it adds nothing. */
  readonly ctes: RawBuilder<unknown>;
  /** A scalar expression over those CTEs, returned with each row of the statement. */
  readonly outcome: RawBuilder<unknown>;
  /** After the statement committed, with the `outcome` it returned; not called when it returned no row. */
  committed(outcome: unknown): void;
}

export const NOTHING_ADDED: StatementAddition = {
  ctes: sql``,
  outcome: sql`NULL`,
  committed: () => undefined,
};
