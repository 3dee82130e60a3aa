import { CompiledQuery } from 'kysely';

/** What a statement did: the rows it returned (if any), and how many rows it changed. */
export interface StatementResult<Row> {
  readonly rows: Row[];
  readonly affectedRows: number;
}

/** How `Database.transaction` runs its work. */
export interface TransactionOptions {
  /**
   * 'full' (default): fsynced commits (SQLite's connection at synchronous=FULL; PostgreSQL as
   * configured). 'relaxed': bookkeeping whose loss on a power failure is harmless (the webhook
   * queue's claims and results): SQLite's relaxed connection (synchronous=NORMAL), PostgreSQL
   * `SET LOCAL synchronous_commit TO off`.
   */
  readonly durability?: 'full' | 'relaxed';
  /**
   * Named locks taken right after BEGIN: PostgreSQL `pg_advisory_xact_lock(hashtext(name))`, sent with
   * the BEGIN in one round trip; SQLite: nothing (BEGIN IMMEDIATE already serialises writers).
   */
  readonly locks?: readonly string[];
  /**
   * Tables whose writers this transaction waits for, and holds back until it commits: PostgreSQL
   * `LOCK TABLE … IN SHARE MODE` after the named locks, in the same round trip; SQLite: nothing
   * (BEGIN IMMEDIATE already holds every writer back).
   */
  readonly holdWritesTo?: readonly string[];
}

/**
 * An open transaction of the store, handed to the work of `Database.transaction` (and by a feature's
 * repository to what must commit together with its writes: the plants' new-plant events, say). It
 * does not depend on the store: work adds its statements with `execute`, built and compiled with the
 * typed query builder (`Kysely<Tables>`), and is written once as
 * `async (tx) => { const { rows } = await tx.execute(query); … }`.
 *
 * On SQLite `execute` runs the statement at once and returns its result, so work that does not
 * await anything else runs from BEGIN to COMMIT in one go. On PostgreSQL it returns a promise.
 */
export abstract class Transaction {
  /** Runs one compiled statement inside this transaction; driver errors are thrown as they are. */
  abstract execute<Row>(query: CompiledQuery<Row>): StatementResult<Row> | Promise<StatementResult<Row>>;
}
