import { Events } from './events';
import { EventType } from './event-type';

/**
 * What publishes events (the webhook outbox, which provides and exports it): one generic writer for
 * every event type. Features never use it directly; `publishes(…)` binds their port to it.
 */
export abstract class EventPublisher {
  /** The writer of `type`'s events, which implements its port. Declares the type: a name is declared once. */
  abstract writerFor<Data extends object>(type: EventType<Data>): Events<Data>;
}
