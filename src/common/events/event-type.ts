import { Provider } from '@nestjs/common';
import { NOTHING_ADDED, StatementAddition } from '../../database/statement-addition';
import { CreatedEvents } from './created-events';

/**
 * One kind of domain event a feature publishes, declared beside the feature (`PLANT_CREATED` in
 * `plants/plant-events.ts`): its name, its port, its body, and how the document shows it. Whoever
 * publishes events (the webhook outbox) knows event types through this, never the feature.
 */
export interface EventType<Row> {
  /** What subscribers choose and deliveries carry as `eventType`, e.g. `plant.created`. */
  readonly name: string;
  /** The feature's port, named for the event (`PlantEvents`): the token the publisher is bound to. */
  readonly port: abstract new () => CreatedEvents<Row>;
  /** The row's int64 key (on PostgreSQL the event is written only if the statement inserted that key). */
  readonly key: (row: Row) => bigint;
  /** The body exactly as sent (and signed): JSON text, so an int64 stays exact. */
  readonly payload: (row: Row) => string;
  /** The webhook in the OpenAPI document's `webhooks` section. */
  readonly webhook: {
    /** Its key there, and its operationId (`newPlant`). */
    readonly name: string;
    readonly summary: string;
    /** What it announces, and when it is sent; how delivery works is added by the publisher. */
    readonly description: string;
    /** The model of the body (a DTO class, documented as a schema). */
    // eslint-disable-next-line @typescript-eslint/no-unsafe-function-type -- @nestjs/swagger's own type for a model class.
    readonly body: Function;
  };
}

/**
 * What publishes events (the webhook outbox, which provides and exports it): one generic writer for
 * every event type. Features never use it directly; `publishes(…)` binds their port to it.
 */
export abstract class EventPublisher {
  /** The writer of `type`'s events, which implements its port. Declares the type: a name is declared once. */
  abstract writerFor<Row extends object>(type: EventType<Row>): CreatedEvents<Row>;
}

/**
 * The one line a feature's module adds to publish `type`: its port, bound to the publisher's writer,
 * which declares the type (endpoints may subscribe to it, the document's `webhooks` shows it). The
 * module imports the publisher's module (plants: `PlantsModule.register(webhooks)`).
 *
 * `{ enabled: false }`: the port publishes nothing and the type is not declared (a generated resource
 * starts so: turning it to `true` is its one line to publish).
 */
export function publishes<Row extends object>(type: EventType<Row>, options: { enabled?: boolean } = {}): Provider {
  if (options.enabled === false) return publishesNothing(type.port);
  return {
    provide: type.port,
    inject: [EventPublisher],
    useFactory: (publisher: EventPublisher) => publisher.writerFor(type),
  };
}

/** A port that publishes nothing: what commits with the rows is the rows alone (a repository's tests give it). */
export class NoEvents<Row = never> extends CreatedEvents<Row> {
  created(): void {}
  committed(): void {}
  createdInStatement(): StatementAddition {
    return NOTHING_ADDED;
  }
}

/**
 * The binding of a feature's port while it publishes nothing (no import of a publisher needed). Its
 * module swaps this line for `publishes(THE_EVENT_TYPE)` to publish.
 */
export function publishesNothing<Row>(port: abstract new () => CreatedEvents<Row>): Provider {
  return { provide: port, useValue: new NoEvents() };
}
