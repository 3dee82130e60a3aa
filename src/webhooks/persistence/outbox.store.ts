import { Transaction } from '../../database/transaction';
import { NewMessage } from './deliveries';

/**
 * The outbox's write, the first of the delivery persistence's three jobs (with `DispatchQueue` and
 * `DeliveryLog`): messages and their deliveries, added to the transaction that stores the plants.
 */
export abstract class OutboxStore {
  /**
   * Writes each message and one delivery per endpoint enabled now, inside `transaction`. With no
   * enabled endpoint, nothing at all (on SQLite, the messages are not even made). Gives how many deliveries
   * it wrote: at once on SQLite (the group commit's transaction is synchronous), as a promise on
   * PostgreSQL. Driver errors are thrown as they are (the transaction's owner classifies them).
   */
  abstract write(transaction: Transaction, messages: () => readonly NewMessage[]): number | Promise<number>;
}
