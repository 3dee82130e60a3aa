import { getSchemaPath, PathItemObject, ReferenceObject, SchemaObject } from '@nestjs/swagger';
import { EventType } from '../events/event-type';
import { MAX_WEBHOOK_SECRETS } from '../config/webhook-config';
import { webhookBody } from './webhook-body';
import { signature } from './webhook.signer';

/** `v1,` and the base64 of an HMAC-SHA256 (32 bytes). */
const SIGNATURE = 'v1,[A-Za-z0-9+/]{43}=';

/**
 * An event type as the document's `webhooks` show it: what it declares, its example's data written as
 * it is sent (`EventType.data`), and who receives it.
 */
export interface DocumentedEvent {
  readonly name: string;
  readonly bare: boolean;
  readonly webhook: Omit<EventType<never>['webhook'], 'example'>;
  /** The data of its example, JSON text. */
  readonly exampleData: string;
  /** Who receives it, as its description says: "every enabled endpoint subscribed to …". */
  readonly recipients: string;
}

/** `type` as the document shows it, received by the endpoints subscribed to it unless `recipients` says otherwise. */
export function documented<Data>(
  type: Omit<EventType<Data>, 'port'>,
  recipients = `every enabled endpoint subscribed to \`${type.name}\` (its \`eventTypes\`)`,
): DocumentedEvent {
  const { example, ...webhook } = type.webhook;
  return { name: type.name, bare: type.bare === true, webhook, exampleData: type.data(example), recipients };
}

/**
 * The delivery every webhook's example shows: its `webhook-id`, when its event was written (an
 * envelope's `timestamp`), when it was sent (`webhook-timestamp`, a second later), and the secret that
 * signs it, the Endpoint's example secret, so a receiver can check its verification against it.
 */
const EXAMPLE = {
  webhookId: 'msg_2b5ad1c3f0a64c6e9f3d7e1a8b4c2d10',
  writtenAtMs: Date.parse('2026-11-29T07:11:32.123Z'),
  sentAtSeconds: 1795936293,
  secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw',
};

/** An envelope's `timestamp` as `webhookBody` writes it: `2026-11-29T07:11:32.123Z`. */
const TIMESTAMP_EXAMPLE = new Date(EXAMPLE.writtenAtMs).toISOString();

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

/**
 * The body of `type` as it is on the wire (`webhookBody`): the data's model alone for a bare type, else
 * the Standard Webhooks envelope around it, with the type as a constant.
 */
function bodySchema(type: DocumentedEvent): SchemaObject | ReferenceObject {
  const data = { $ref: getSchemaPath(type.webhook.data) };
  if (type.bare) return data;
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
 * The example of `type`'s delivery: its body as sent (`webhookBody`), as JSON, and its signature.
 * Throws when the body does not read back as written (an example id beyond 2^53, which a tool
 * reading the document would round).
 */
function exampleOf(type: DocumentedEvent): { body: unknown; signature: string } {
  const sent = webhookBody({
    eventType: type.name,
    data: type.exampleData,
    enveloped: !type.bare,
    createdAtMs: EXAMPLE.writtenAtMs,
  });
  const body: unknown = JSON.parse(sent);
  if (JSON.stringify(body) !== sent) {
    throw new Error(`The example of ${type.name} changes when read as JSON: keep its ids within 2^53`);
  }
  return { body, signature: signature([EXAMPLE.secret], EXAMPLE.webhookId, EXAMPLE.sentAtSeconds, sent) };
}

/**
 * The webhook the service sends for an event type (OpenAPI 3.1 `webhooks`): what the type declares
 * (its summary, what it announces, its data), who receives it, how every delivery works, and an
 * example delivery (its body and its signature headers). Declared here rather than with
 * `@ApiWebhook()`, which needs a controller route, and this is a request the service makes, not one
 * it serves.
 */
export function eventWebhook(type: DocumentedEvent): PathItemObject {
  const { name, summary, description } = type.webhook;
  const example = exampleOf(type);
  return {
    post: {
      operationId: name,
      summary,
      description:
        `Event type \`${type.name}\`. ${description} ` +
        `Delivered to ${type.recipients}, from a ` +
        'transactional outbox: at least once, in no guaranteed order, retried with backoff on anything but ' +
        'a 2xx within WEBHOOK_TIMEOUT_MS (WEBHOOK_RETRY_SCHEDULE; 410 Gone stops the retries; redirects are ' +
        'not followed). Signed per Standard Webhooks: verify with the `standardwebhooks` library and ' +
        'deduplicate by `webhook-id`. Ids in the body are exact; parse them with a big-integer-aware parser.',
      parameters: [
        signatureHeader(
          'webhook-id',
          'Unique per event and subscriber, the same on every retry: the deduplication key.',
          EXAMPLE.webhookId,
          { pattern: '^msg_[0-9a-f]{32}$', maxLength: 36 },
        ),
        signatureHeader(
          'webhook-timestamp',
          'Unix seconds of this attempt; reject ones too far from now (e.g. 5 minutes).',
          String(EXAMPLE.sentAtSeconds),
          { pattern: '^[0-9]{1,12}$', maxLength: 12 },
        ),
        signatureHeader(
          'webhook-signature',
          'v1,<base64 HMAC-SHA256 of "id.timestamp.body">, one per configured secret, space-separated. ' +
            `The example signs the example body, webhook-id and webhook-timestamp with the secret \`${EXAMPLE.secret}\`.`,
          example.signature,
          // One per secret (an endpoint's current and previous, or each of WEBHOOK_SECRET's): 47 characters
          // each, a space between.
          { pattern: `^${SIGNATURE}( ${SIGNATURE})*$`, maxLength: MAX_WEBHOOK_SECRETS * 48 - 1 },
        ),
      ],
      requestBody: {
        required: true,
        content: { 'application/json': { schema: bodySchema(type), example: example.body } },
      },
      responses: {
        '200': { description: 'Received. Any 2xx counts; anything else is retried, except 410.' },
        '410': { description: 'Gone: the subscriber wants no more of this delivery; it is not retried.' },
      },
      security: [],
    },
  };
}

/** The `webhooks` section: one webhook per event type, keyed by its name in the document. */
export function eventWebhooks(types: readonly DocumentedEvent[]): Record<string, PathItemObject> {
  return Object.fromEntries(types.map((type) => [type.webhook.name, eventWebhook(type)]));
}
