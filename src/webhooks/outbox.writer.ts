import { randomUUID } from 'node:crypto';
import { Transaction } from '../database/transaction';
import { Events } from '../events/events';
import { EventType } from '../events/event-type';
import { traceCarrierOf } from '../tracing/trace-context';
import { NewMessage } from './deliveries';
import { OutboxStore } from './persistence/outbox.store';

/**
 * The transactional outbox's writer of one event type, and so that feature's port (`PlantDeleted` for
 * `plant.deleted`): in the transaction of the change, one message per item (one webhook-id for every
 * endpoint) and one delivery per endpoint enabled then and subscribed to the type. So a 2xx means its
 * event is as durable as the change, and no event exists for a change that did not commit. Once the
 * transaction has committed, it wakes the dispatcher, only if deliveries were written.
 */
export class OutboxWriter<Data extends object> extends Events<Data> {
  constructor(
    private readonly outbox: OutboxStore,
    private readonly wake: () => void,
    private readonly type: EventType<Data>,
  ) {
    super();
  }

  async publish(tx: Transaction, items: readonly Data[]): Promise<void> {
    if (items.length === 0) return;
    // With no endpoint, creates and deletes cost the wake nothing.
    const written = await this.outbox.write(tx, () => items.map((item) => newMessage(this.type, item)));
    if (written > 0) tx.afterCommit(this.wake);
  }
}

/**
 * The outbox's message of one event of `type`: a new webhook-id (the same for every endpoint and on
 * every attempt), the data as the type writes it, in the envelope unless the type is bare, and the
 * trace of the request `item` came from, so the delivery joins it on whichever instance sends it.
 */
export function newMessage<Data extends object>(
  type: Pick<EventType<Data>, 'name' | 'data' | 'bare'>,
  item: Data,
): NewMessage {
  return {
    id: `msg_${randomUUID().replaceAll('-', '')}`,
    eventType: type.name,
    data: type.data(item),
    enveloped: type.bare !== true,
    traceContext: traceCarrierOf(item),
  };
}
