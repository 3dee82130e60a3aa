import { RawBuilder } from 'kysely';
import { StatementAddition } from '../database/statement-addition';
import { Transaction } from '../database/transaction';
import { Plant } from './plant';

/**
 * The port through which plants records "plants created": what else must commit together with new
 * plants (only those the store inserted, never a replay). Plants knows nothing more of who listens;
 * the module passed to `PlantsModule.register` provides it (the webhook outbox). Each store asks in
 * its own way:
 *
 * - SQLite: `created` inside the group commit's transaction, then `committed` once it committed.
 * - PostgreSQL: `createdInStatement` before the one autocommitted statement that inserts a batch;
 *   what it returns becomes part of that statement, and is told when it committed.
 */
export abstract class PlantEvents {
  /** SQLite: inside the transaction that inserted `plants`; it must finish before it returns. */
  abstract created(transaction: Transaction, plants: readonly Plant[]): void | Promise<void>;

  /** SQLite: after `transaction` committed (the same object `created` was given). */
  abstract committed(transaction: Transaction): void;

  /**
   * PostgreSQL: what commits with the plants that the statement about to run inserts. `inserted`
   * names that statement's relation of the plants it inserted (column `id`, bigint); `plants` are the
   * batch, each id once (its first occurrence, the one inserted if any is). Called once per statement.
   */
  abstract createdInStatement(inserted: RawBuilder<unknown>, plants: readonly Plant[]): StatementAddition;
}
