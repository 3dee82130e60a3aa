import { RawBuilder } from 'kysely';
import { Transaction } from '../../database/transaction';
import { NewMessage } from './deliveries';

/** An event of a row that a statement may insert, keyed by that row's id: written only if it is. */
export interface RowMessage extends NewMessage {
  readonly rowId: bigint;
}

/** The outbox's part of a PostgreSQL statement (see `OutboxStore.writeWith`). */
export interface OutboxAddition {
  /** Its common table expressions, each `, name AS (…)`. */
  readonly ctes: RawBuilder<unknown>;
  /** How many deliveries they wrote (a count, as PostgreSQL returns a bigint). */
  readonly deliveries: RawBuilder<unknown>;
}

/**
 * The outbox's write, the first of the delivery persistence's three jobs (with `DispatchQueue` and
 * `DeliveryLog`): messages and their deliveries, committed with the plants they announce. Each store
 * has its own way, as the plants' group commit does.
 */
export abstract class OutboxStore {
  /**
   * SQLite: writes each message and one delivery per endpoint enabled now and subscribed to its event
   * type, inside `transaction`, at once (the group commit's transaction is synchronous). A message no
   * endpoint subscribes to is not written; with no enabled endpoint, the messages are not even made. Gives how many deliveries it wrote. Driver errors are thrown
   * as they are (the transaction's owner classifies them).
   */
  abstract write(transaction: Transaction, messages: () => readonly NewMessage[]): number;

  /**
   * PostgreSQL: the same write as common table expressions of the statement that inserts the rows
   * (`inserted` names that statement's relation of them, column `id`): a message for each row it
   * inserted and one delivery per endpoint enabled and subscribed to its event type, nothing when none is. Enabling an endpoint takes
   * `OUTBOX_WRITES_DRAINED` first, so the statement's snapshot never misses one enabled before it commits.
   */
  abstract writeWith(inserted: RawBuilder<unknown>, messages: readonly RowMessage[]): OutboxAddition;
}
