import { Events } from './events';

/**
 * One kind of domain event a feature publishes, declared beside the feature (`PLANT_DELETED` in
 * `plants/plant-events.ts`): its name, its port, its data, and how the document shows it. Whoever
 * publishes events (the webhook outbox) knows event types through this, never the feature.
 */
export interface EventType<Data> {
  /** What subscribers choose, deliveries carry as `eventType`, and an envelope as `type`: `plant.deleted`. */
  readonly name: string;
  /** The feature's port, named for the event (`PlantDeleted`): the token the publisher is bound to. */
  readonly port: abstract new () => Events<Data>;
  /** The event's data as JSON text, ids exact (`eventData`): the body's `data`, or the body itself when `bare`. */
  readonly data: (item: Data) => string;
  /**
   * The body is the data alone, with no envelope: only `plant.created`, whose body the specification
   * fixes (the sample's NewPlant). Every other type is sent in the Standard Webhooks envelope,
   * `{"type", "timestamp", "data"}`, so a receiver tells the types apart inside the signed body.
   */
  readonly bare?: boolean;
  /** The webhook in the OpenAPI document's `webhooks` section. */
  readonly webhook: {
    /** Its key there, and its operationId (`plantDeleted`). */
    readonly name: string;
    readonly summary: string;
    /** What it announces, and when it is sent; how delivery works is added by the publisher. */
    readonly description: string;
    /** The model of the data (a DTO class, documented as a schema). */
    // eslint-disable-next-line @typescript-eslint/no-unsafe-function-type -- @nestjs/swagger's own type for a model class.
    readonly data: Function;
    /**
     * An item whose event the document shows as its example, written by `data` (and the envelope) as it
     * is sent. Its ids within 2^53, so no tool that reads the document rounds them.
     */
    readonly example: Data;
  };
}
