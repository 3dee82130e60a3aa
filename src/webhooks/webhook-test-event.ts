import { eventData } from '../events/event-data';
import { EventType } from '../events/event-type';
import { WebhookTestDto } from './endpoints/dto/webhook-test.dto';
import { documented } from './event.webhook';

/** The data of a `webhook.test` event: the endpoint it was sent to. */
export interface WebhookTest {
  readonly endpointId: string;
}

/**
 * `webhook.test`, which `POST /webhooks/endpoints/{id}/test` sends to that endpoint alone, whatever
 * its `eventTypes`, so a subscriber can check its receiver before the first real event. The document
 * declares it, but no endpoint subscribes to it; and it is not a `plant.*` type, so a receiver that
 * stores plants by type never stores one from it.
 */
export const WEBHOOK_TEST = {
  name: 'webhook.test',
  data: eventData,
  webhook: {
    name: 'webhookTest',
    summary: 'A test sent to one endpoint',
    description:
      'Sent by `POST /webhooks/endpoints/{id}/test`, with the endpoint’s id as its `data`, to check that a ' +
      'receiver verifies the signature and reads the envelope. It announces no change: answer it with a 2xx ' +
      'and store nothing. It counts toward the endpoint’s health like any delivery: a 410 disables the ' +
      'endpoint, and failures slow its deliveries down.',
    data: WebhookTestDto,
    example: { endpointId: 'ep_019ab3c4d5e600002f4e1a9b7c3d' },
  },
} satisfies Omit<EventType<WebhookTest>, 'port'>;

/** `webhook.test` as the document's `webhooks` show it. */
export const DOCUMENTED_WEBHOOK_TEST = documented(
  WEBHOOK_TEST,
  'one endpoint only, by `POST /webhooks/endpoints/{id}/test`, whatever its `eventTypes` (no endpoint subscribes to it)',
);
