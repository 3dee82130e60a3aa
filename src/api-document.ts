import { INestApplication } from '@nestjs/common';
import { OpenAPIObject } from '@nestjs/swagger';
import { createOpenApiDocument } from './openapi/openapi-document';
import { eventWebhooks } from './webhooks/event.webhook';
import { OutboxPublisher } from './webhooks/outbox.publisher';

/**
 * The service's document: its routes, and a webhook for every event type a feature publishes (the
 * `newPlant` webhook, a NewPlant body; `plantDeleted`, a NewPlant in an envelope), with the models of their data.
 */
export function createApiDocument(app: INestApplication): OpenAPIObject {
  const types = app.get(OutboxPublisher).declared();
  return createOpenApiDocument(app, {
    extraModels: types.map((type) => type.webhook.data),
    webhooks: eventWebhooks(types),
  });
}
