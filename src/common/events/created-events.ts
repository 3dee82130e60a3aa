import { RawBuilder } from 'kysely';
import { StatementAddition } from '../../database/statement-addition';
import { Transaction } from '../../database/transaction';

/**
 * The shape of a feature's "rows created" port: what else must commit together with new rows (only
 * those the store inserted, never a replay). A feature names its own port for the event and adds
 * nothing (`export abstract class PlantEvents extends CreatedEvents<Plant> {}`); whoever publishes
 * events (the webhook outbox) implements it, and the feature knows nothing more of who listens. Each
 * store asks in its own way:
 *
 * - SQLite: `created` inside the write's transaction, then `committed` once it committed.
 * - PostgreSQL: `createdInStatement` before the one autocommitted statement that inserts a batch;
 *   what it returns becomes part of that statement, and is told when it committed.
 */
export abstract class CreatedEvents<Row> {
  /** SQLite: inside the transaction that inserted `rows`; it must finish before it returns. */
  abstract created(transaction: Transaction, rows: readonly Row[]): void | Promise<void>;

  /** SQLite: after `transaction` committed (the same object `created` was given). */
  abstract committed(transaction: Transaction): void;

  /**
   * PostgreSQL: what commits with the rows that the statement about to run inserts. `inserted` names
   * that statement's relation of the rows it inserted (column `id`, bigint); `rows` are the batch,
   * each id once (its first occurrence, the one inserted if any is). Called once per statement.
   */
  abstract createdInStatement(inserted: RawBuilder<unknown>, rows: readonly Row[]): StatementAddition;
}
