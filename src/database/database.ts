import { CompiledQuery, Kysely } from 'kysely';
import { Migration } from './migration';
import { Tables } from './tables';
import { StatementResult, Transaction, TransactionOptions } from './transaction';

/**
 * The one connection of the service to its store (an SQLite file or a PostgreSQL pool), and the DI
 * token of it. `DatabaseModule` opens it and applies every feature's migrations at start-up, and
 * closes it last at shutdown; features use it and never open their own.
 */
export abstract class Database {
  /**
   * Which store this is, for the few queries that must differ (PostgreSQL's `unnest` batch insert,
   * SQLite's one transaction per batch: `InsertOnce`): each difference is one method named for its
   * store, picked on `kind`; everything else is written once with the query builder.
   */
  abstract readonly kind: 'sqlite' | 'postgres';

  /** Where the data lives, for the start-up log, never with a credential: a file, or host:port/database. */
  abstract readonly location: string;

  /** Every feature's migrations in name order; all of them are applied once start-up has finished. */
  abstract readonly migrations: readonly Migration[];

  /** The typed query builder of this store's dialect (`DatabaseModule` provides it as `Kysely`). */
  abstract readonly kysely: Kysely<Tables>;

  /** Resolves when the store answers and its schema is migrated; rejects otherwise. For readiness. */
  abstract ping(): Promise<void>;

  /**
   * Runs one compiled statement on its own (autocommitted), bounded by the store's timeouts. A
   * failure rejects with the port errors: `StorageUnavailableError`, `StorageTimeoutError`, or
   * `StorageError` whose message is "<store> failed to <action>".
   */
  abstract execute<Row>(action: string, query: CompiledQuery<Row>): Promise<StatementResult<Row>>;

  /**
   * Runs `work` in one transaction and resolves with what it returns. On SQLite: BEGIN IMMEDIATE …
   * COMMIT on the store's own connection (the relaxed one for `durability: 'relaxed'`); `tx.execute`
   * runs each statement at once, and while the transaction is open no other `execute` or
   * `transaction` of this process runs (they wait their turn); a file busy with another process is
   * tried again off the event loop for `BUSY_WAIT_MS`, then a 503. On PostgreSQL: one pooled
   * connection, `options` sent with the BEGIN. Inside `work`, use `tx` only: a `Database.execute` or
   * another transaction there would wait for this one to end (SQLite) or run outside it.
   *
   * Driver errors (of a statement, BEGIN or COMMIT) are translated to the port's errors
   * (`StorageUnavailableError`, `StorageTimeoutError`, or `StorageError` "<store> failed to <action>");
   * errors `work` throws itself pass as they are. `work` may catch a statement's error and decide.
   */
  abstract transaction<T>(
    action: string,
    work: (tx: Transaction) => T | Promise<T>,
    options?: TransactionOptions,
  ): Promise<T>;
}
