import { Transaction } from '../../database/transaction';
import { NewMessage } from '../deliveries';

/** What a write for one endpoint found of it: enabled (and so written for it), disabled, or none. */
export type EndpointFound = 'enabled' | 'disabled' | 'none';

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

  /**
   * Writes `message` in `tx` for the endpoint `endpointId` alone, whatever its event types, with its
   * delivery, if the endpoint is there and enabled; resolves with what the write found. The endpoint is
   * read where the message is written, as `write` reads them, and its row is held until `tx` ends: an
   * endpoint disabled or deleted meanwhile is either what the write finds, or waits for its commit.
   */
  abstract writeTo(tx: Transaction, endpointId: string, message: NewMessage): Promise<EndpointFound>;
}
