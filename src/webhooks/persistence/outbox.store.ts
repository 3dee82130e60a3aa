import { Transaction } from '../../database/transaction';
import { NewMessage } from '../deliveries';

/**
 * The outbox's write: messages and their deliveries, committed in the transaction of the change they
 * announce. A message goes to every endpoint enabled at commit and subscribed to its event type; one
 * no endpoint subscribes to is not written. Enabling an endpoint takes `OUTBOX_WRITES_DRAINED` first,
 * so no write misses one enabled before it commits.
 */
export abstract class OutboxStore {
  /**
   * Writes the messages in `tx`, each stamped with the store's clock at the write; resolves with how
   * many deliveries it wrote. `messages` is called at most once, and not when the store already knows
   * that no endpoint is enabled. Driver errors are thrown as they are (the transaction translates them).
   */
  abstract write(tx: Transaction, messages: () => readonly NewMessage[]): Promise<number>;
}
