import { CompiledQuery, Kysely } from 'kysely';
import { Migration } from './migration';
import { Tables } from './tables';
import { StatementResult, Transaction, TransactionOptions } from './transaction';

/**
 * The service's one connection to its store (an SQLite file or a PostgreSQL pool), and its DI token,
 * opened, migrated and closed by `DatabaseModule`: features use it and never open their own.
 */
export abstract class Database {
  /**
   * Which store, for what must differ (`InsertOnce`'s batch, `StoredColumns`' conversions, the webhooks'
   * `StoreClock` and queue claim): one method or function per store, picked on `kind`.
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
   * Runs `work` in one transaction and resolves with what it returns. SQLite: BEGIN IMMEDIATE … COMMIT,
   * each `tx.execute` at once, and no other `execute` or `transaction` of this process runs meanwhile
   * (they wait their turn); a file busy with another process is tried again off the event loop for
   * `BUSY_WAIT_MS`, then a 503. PostgreSQL: one pooled connection, `options` sent with the BEGIN.
   * Inside `work`, use `tx` only: `Database.execute` or another transaction there would wait for this
   * one to end (SQLite) or run outside it.
   *
   * Driver errors (a statement's, BEGIN's, COMMIT's) become the port's, as for `execute`; what `work`
   * throws itself passes as it is. A failed statement fails the transaction on both stores (PostgreSQL
   * aborts it): `work` may catch the error to throw its own, but work that carries on is rolled back
   * and rejected with the statement's error.
   */
  abstract transaction<T>(
    action: string,
    work: (tx: Transaction) => T | Promise<T>,
    options?: TransactionOptions,
  ): Promise<T>;
}
