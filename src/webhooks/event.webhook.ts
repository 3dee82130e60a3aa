import { getSchemaPath, PathItemObject, ReferenceObject, SchemaObject } from '@nestjs/swagger';
import { EventType } from '../events/event-type';
import { MAX_WEBHOOK_SECRETS } from '../config/webhook-config';

/** `v1,` and the base64 of an HMAC-SHA256 (32 bytes). */
const SIGNATURE = 'v1,[A-Za-z0-9+/]{43}=';

const signatureHeader = (
  name: string,
  description: string,
  example: string,
  constraints: { pattern: string; maxLength: number },
) => ({
  in: 'header' as const,
  name,
  required: true,
  description,
  schema: { type: 'string', ...constraints, example },
});

/** An envelope's `timestamp` as `webhookBody` writes it: `2026-11-29T07:11:32.123Z`. */
const TIMESTAMP_EXAMPLE = '2026-11-29T07:11:32.123Z';

/**
 * The body of `type` as it is on the wire (`webhookBody`): the data's model alone for a bare type, else
 * the Standard Webhooks envelope around it, with the type as a constant.
 */
function bodySchema(type: EventType<never>): SchemaObject | ReferenceObject {
  const data = { $ref: getSchemaPath(type.webhook.data) };
  if (type.bare === true) return data;
  return {
    type: 'object',
    description: `The Standard Webhooks envelope of \`${type.name}\`: a receiver tells event types apart by \`type\`, inside the signed body.`,
    required: ['type', 'timestamp', 'data'],
    properties: {
      type: { type: 'string', const: type.name, maxLength: type.name.length, example: type.name },
      timestamp: {
        type: 'string',
        format: 'date-time',
        maxLength: TIMESTAMP_EXAMPLE.length,
        description:
          'When the event was written, on the store’s clock: RFC 3339 in UTC, in milliseconds. The same on every attempt.',
        example: TIMESTAMP_EXAMPLE,
      },
      data,
    },
  } as SchemaObject;
}

/**
 * The webhook the service sends for an event type (OpenAPI 3.1 `webhooks`): what the type declares
 * (its summary, what it announces, its data) and how every delivery works. Declared here rather than
 * with `@ApiWebhook()`, which needs a controller route, and this is a request the service makes, not
 * one it serves.
 */
export function eventWebhook(type: EventType<never>): PathItemObject {
  const { name, summary, description } = type.webhook;
  return {
    post: {
      operationId: name,
      summary,
      description:
        `Event type \`${type.name}\`. ${description} ` +
        `Delivered to every enabled endpoint subscribed to \`${type.name}\` (its \`eventTypes\`), from a ` +
        'transactional outbox: at least once, in no guaranteed order, retried with backoff on anything but ' +
        'a 2xx within WEBHOOK_TIMEOUT_MS (WEBHOOK_RETRY_SCHEDULE; 410 Gone stops the retries; redirects are ' +
        'not followed). Signed per Standard Webhooks: verify with the `standardwebhooks` library and ' +
        'deduplicate by `webhook-id`. Ids in the body are exact; parse them with a big-integer-aware parser.',
      parameters: [
        signatureHeader(
          'webhook-id',
          'Unique per event and subscriber, the same on every retry: the deduplication key.',
          'msg_2b5ad1c3f0a64c6e9f3d7e1a8b4c2d10',
          { pattern: '^msg_[0-9a-f]{32}$', maxLength: 36 },
        ),
        signatureHeader(
          'webhook-timestamp',
          'Unix seconds of this attempt; reject ones too far from now (e.g. 5 minutes).',
          '1795430400',
          { pattern: '^[0-9]{1,12}$', maxLength: 12 },
        ),
        signatureHeader(
          'webhook-signature',
          'v1,<base64 HMAC-SHA256 of "id.timestamp.body">, one per configured secret, space-separated.',
          'v1,K5oZfzN95Z9UVu1EsfQmfVNQhnkZ2pj9o9NDN/H/pI4=',
          // One per secret (an endpoint's current and previous, or each of WEBHOOK_SECRET's): 47 characters
          // each, a space between.
          { pattern: `^${SIGNATURE}( ${SIGNATURE})*$`, maxLength: MAX_WEBHOOK_SECRETS * 48 - 1 },
        ),
      ],
      requestBody: {
        required: true,
        content: { 'application/json': { schema: bodySchema(type) } },
      },
      responses: {
        '200': { description: 'Received. Any 2xx counts; anything else is retried, except 410.' },
        '410': { description: 'Gone: the subscriber wants no more of this delivery; it is not retried.' },
      },
      security: [],
    },
  };
}

/** The `webhooks` section: one webhook per declared event type, keyed by its name in the document. */
export function eventWebhooks(types: readonly EventType<never>[]): Record<string, PathItemObject> {
  return Object.fromEntries(types.map((type) => [type.webhook.name, eventWebhook(type)]));
}
