import { getSchemaPath, PathItemObject } from '@nestjs/swagger';
import { MAX_WEBHOOK_SECRETS } from '../config/webhook-config';
import { NewPlantDto } from '../plants/dto/new-plant.dto';

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

/**
 * The webhook the service sends (OpenAPI 3.1 `webhooks`). Declared here rather than with
 * `@ApiWebhook()`, which needs a controller route, and this is a request the service makes, not one
 * it serves.
 */
export const NEW_PLANT_WEBHOOK: PathItemObject = {
  post: {
    operationId: 'newPlant',
    summary: 'A new plant was added to the store',
    description:
      'Sent to every URL of WEBHOOK_URLS once per stored plant (a create that is not a replay), from a ' +
      'transactional outbox: at least once, in no guaranteed order, retried with backoff on anything but ' +
      'a 2xx within WEBHOOK_TIMEOUT_MS (WEBHOOK_RETRY_SCHEDULE; 410 Gone stops the retries; redirects are ' +
      'not followed). Signed per Standard Webhooks: verify with the `standardwebhooks` library and ' +
      'deduplicate by `webhook-id`. The id in the body is exact; parse it with a big-integer-aware parser.',
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
      content: { 'application/json': { schema: { $ref: getSchemaPath(NewPlantDto) } } },
    },
    responses: {
      '200': { description: 'Received. Any 2xx counts; anything else is retried, except 410.' },
      '410': { description: 'Gone: the subscriber wants no more of this delivery; it is not retried.' },
    },
    security: [],
  },
};
