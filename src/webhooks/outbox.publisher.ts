import { Injectable } from '@nestjs/common';
import { EventPublisher } from '../events/event-publisher';
import { EventType } from '../events/event-type';
import { Events } from '../events/events';
import { documented, DocumentedEvent } from './event.webhook';
import { OutboxWriter } from './outbox.writer';
import { OutboxStore } from './persistence/outbox.store';
import { WebhookDispatcher } from './webhook.dispatcher';
import { DOCUMENTED_WEBHOOK_TEST } from './webhook-test-event';

/**
 * The webhook feature's `EventPublisher`: an `OutboxWriter` for each event type a feature binds
 * (`publishes(…)`), and the register of those types, which endpoints subscribe to and the document
 * declares. Every type is declared while the modules are built, before the service answers.
 */
@Injectable()
export class OutboxPublisher extends EventPublisher {
  private readonly types = new Map<string, DocumentedEvent>();

  constructor(
    private readonly outbox: OutboxStore,
    private readonly dispatcher: WebhookDispatcher,
  ) {
    super();
  }

  writerFor<Data extends object>(type: EventType<Data>): Events<Data> {
    if (this.types.has(type.name)) {
      throw new Error(`The event type ${type.name} is published twice: bind its port once (publishes(…))`);
    }
    this.types.set(type.name, documented(type));
    return new OutboxWriter(this.outbox, () => this.dispatcher.wake(), type);
  }

  /**
   * The event types the document declares, as it shows them: those bound, in that order, then
   * `webhook.test`, which this feature sends itself (`POST /webhooks/endpoints/{id}/test`).
   */
  declared(): readonly DocumentedEvent[] {
    return [...this.types.values(), DOCUMENTED_WEBHOOK_TEST];
  }

  /** The names of the event types endpoints subscribe to: those bound (never `webhook.test`). */
  names(): string[] {
    return [...this.types.keys()];
  }
}
