import { RawBuilder } from 'kysely';
import { Transaction } from '../../database/transaction';
import { NewMessage } from '../deliveries';

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
 * The outbox's write: messages and their deliveries, committed with the rows they announce, in the
 * form of each store's group commit. A message goes to every endpoint enabled at commit and
 * subscribed to its event type; one no endpoint subscribes to is not written. Enabling an endpoint
 * takes `OUTBOX_WRITES_DRAINED` first, so no write misses one enabled before it commits.
 */
export abstract class OutboxStore {
  /**
   * SQLite: the write, at once, inside the group commit's synchronous `transaction`; with no enabled
   * endpoint the messages are not even made. Gives how many deliveries it wrote. Driver errors are
   * thrown as they are (the transaction's owner classifies them).
   */
  abstract write(transaction: Transaction, messages: () => readonly NewMessage[]): number;

  /**
   * PostgreSQL: the write as common table expressions of the statement that inserts the rows
   * (`inserted` names that statement's relation of them, column `id`), a message only for a row it
   * inserted, read and written on the statement's one snapshot.
   */
  abstract writeWith(inserted: RawBuilder<unknown>, messages: readonly RowMessage[]): OutboxAddition;
}
