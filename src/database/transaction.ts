import { Logger } from '@nestjs/common';
import { CompiledQuery } from 'kysely';

/** What a statement did: the rows it returned (if any), and how many rows it changed. */
export interface StatementResult<Row> {
  readonly rows: Row[];
  readonly affectedRows: number;
}

/** How `Database.transaction` runs its work. */
export interface TransactionOptions {
  /**
   * 'full' (default): fsynced commits (PostgreSQL: as configured). 'relaxed': for bookkeeping whose loss
   * on a power failure is harmless (the webhook queue's claims and results: at-least-once allows a
   * resend): SQLite synchronous=NORMAL, PostgreSQL `SET LOCAL synchronous_commit TO off`.
   */
  readonly durability?: 'full' | 'relaxed';
  /** Named locks taken with the BEGIN: PostgreSQL `pg_advisory_xact_lock(hashtext(name))`. */
  readonly locks?: readonly string[];
  /**
   * Tables whose writers this transaction waits for and holds back until it commits: PostgreSQL
   * `LOCK TABLE … IN SHARE MODE`, after the named locks. SQLite needs neither option: BEGIN IMMEDIATE
   * already holds every other writer back.
   */
  readonly holdWritesTo?: readonly string[];
}

/**
 * An open transaction, handed to the work of `Database.transaction` (and by a repository to what must
 * commit with its writes, such as a feature's events: `await plantDeleted.publish(tx, plants)`). Work
 * is written once for both stores, with queries compiled by `Kysely<Tables>`:
 * `async (tx) => { const { rows } = await tx.execute(query); … }`. On SQLite `execute` runs the
 * statement at once and returns its result, so work that awaits nothing else (no I/O) runs from BEGIN
 * to COMMIT in one go; on PostgreSQL it returns a promise.
 */
export abstract class Transaction {
  /** Runs one compiled statement inside this transaction; driver errors are thrown as they are. */
  abstract execute<Row>(query: CompiledQuery<Row>): StatementResult<Row> | Promise<StatementResult<Row>>;

  /**
   * Runs `callback` once this transaction has committed, before `Database.transaction` resolves; never
   * when it rolls back or its COMMIT fails. For what must follow the commit and never precede it (waking
   * the webhook dispatcher for the deliveries it wrote). A callback that throws is logged; the
   * transaction committed all the same, and the others still run.
   */
  abstract afterCommit(callback: () => void): void;
}

/** The callbacks of a committed transaction (`Transaction.afterCommit`), each run once, in order. */
export function runAfterCommit(callbacks: readonly (() => void)[], logger: Pick<Logger, 'error'>): void {
  for (const callback of callbacks) {
    try {
      callback();
    } catch (error) {
      logger.error(`A callback after a commit failed: ${(error as Error).message}`);
    }
  }
}
