import { randomUUID } from 'node:crypto';
import { Transaction } from '../database/transaction';
import { Events } from '../events/events';
import { EventType } from '../events/event-type';
import { traceCarrierOf } from '../platform/trace-context';
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
    if ((await this.outbox.write(tx, () => items.map((item) => this.messageOf(item)))) > 0) tx.afterCommit(this.wake);
  }

  private messageOf(item: Data): NewMessage {
    return {
      id: `msg_${randomUUID().replaceAll('-', '')}`,
      eventType: this.type.name,
      data: this.type.data(item),
      enveloped: this.type.bare !== true,
      // The committing request's trace, so the delivery joins it on whichever instance sends it.
      traceContext: traceCarrierOf(item),
    };
  }
}
