import { Provider } from '@nestjs/common';
import { EventPublisher } from './event-publisher';
import { EventType } from './event-type';
import { Events } from './events';

/**
 * The one line a feature's module adds to publish `type`: its port, bound to the publisher's writer,
 * which declares the type (endpoints may subscribe to it, the document's `webhooks` shows it). The
 * module imports the publisher's module (plants: `PlantsModule.register(webhooks)`).
 *
 * `{ enabled: false }`: the port publishes nothing and the type is not declared (a generated resource
 * starts so: turning it to `true` is its one line to publish).
 */
export function publishes<Data extends object>(type: EventType<Data>, options: { enabled?: boolean } = {}): Provider {
  if (options.enabled === false) return publishesNothing(type.port);
  return {
    provide: type.port,
    inject: [EventPublisher],
    useFactory: (publisher: EventPublisher) => publisher.writerFor(type),
  };
}

/**
 * The binding of a feature's port while it publishes nothing (no import of a publisher needed). Its
 * module swaps this line for `publishes(THE_EVENT_TYPE)` to publish.
 */
export function publishesNothing<Data>(port: abstract new () => Events<Data>): Provider {
  return { provide: port, useValue: new NoEvents() };
}

/** A port that publishes nothing: what commits is the transaction's own work (a repository's tests give it). */
export class NoEvents<Data = never> extends Events<Data> {
  publish(): Promise<void> {
    return Promise.resolve();
  }
}
