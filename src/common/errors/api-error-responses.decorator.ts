import { applyDecorators } from '@nestjs/common';
import { ApiResponse, ApiResponseOptions } from '@nestjs/swagger';
import { ErrorDto } from './error.dto';

// What a client sees for each status, as the example in the document, true of any resource. A route
// whose message says more (what was not stored, which resource) gives its own.
const EXAMPLE_MESSAGES: Record<number, string> = {
  400: 'name is required; limit must be a decimal integer from 1 to 1000',
  401: 'Bearer token is invalid or expired',
  403: 'This needs the admin permission: a token of ADMIN_TOKENS, or a JWT whose scope holds webhooks:manage',
  404: 'Nothing is stored under id 10',
  408: 'The request was not received completely within 30000 ms',
  414: 'A path parameter is longer than 100 characters',
  431: 'Request line and headers are larger than the limit of 16384 bytes',
  409: 'id 10 is already stored with different content',
  413: 'Request body is larger than the limit of 1048576 bytes',
  415: 'Content-Type must be application/json',
  429: 'Rate limit exceeded: at most 600 requests per minute per token',
  500: 'Internal server error',
  503: 'The database is unavailable; retry shortly',
};

// The headers that come with a status whatever the route.
const HEADERS: Record<number, ApiResponseOptions['headers']> = {
  401: {
    'WWW-Authenticate': {
      description: 'The bearer challenge (RFC 6750), with error="invalid_token" when a token was presented.',
      schema: {
        type: 'string',
        enum: ['Bearer realm="plant-store"', 'Bearer realm="plant-store", error="invalid_token"'],
        example: 'Bearer realm="plant-store", error="invalid_token"',
      },
    },
  },
  403: {
    'WWW-Authenticate': {
      description: 'The bearer challenge (RFC 6750) naming the scope that is missing.',
      schema: {
        type: 'string',
        enum: ['Bearer realm="plant-store", error="insufficient_scope", scope="webhooks:manage"'],
        example: 'Bearer realm="plant-store", error="insufficient_scope", scope="webhooks:manage"',
      },
    },
  },
  429: {
    'Retry-After': {
      description: 'Seconds to wait before the next request counts again.',
      // Both limits count in windows of a minute.
      schema: { type: 'integer', format: 'int32', minimum: 0, maximum: 60, example: 30 },
    },
  },
};

/**
 * What Node answers before any route is chosen, so every operation can get them: the connection is
 * closed after each.
 */
export const CONNECTION_ERRORS = {
  408: 'The request line, headers and body did not all arrive within REQUEST_TIMEOUT_MS (30 s by default).',
  431: 'The request line and headers together are larger than 16 KiB.',
} as const;

/** With JWTs: a token whose key the service has not fetched yet, while the identity provider is away. */
export const IDENTITY_PROVIDER_UNAVAILABLE =
  'Also: a JWT signed with a key not known yet while the identity provider (AUTH_JWKS_URL) is unreachable (nothing was done).';

/**
 * The failures every bearer-protected operation can answer, whatever it does: no valid credential,
 * the connection's limits, the rate limit, and the unexpected. Spread them into `@ApiErrorResponses`.
 */
export const PROTECTED_OPERATION_ERRORS = {
  401: 'No bearer token, a malformed Authorization header, or an unknown token.',
  ...CONNECTION_ERRORS,
  429:
    'Over the rate limit (RATE_LIMIT_PER_MINUTE per token, when set), or too many failed authentications from this ' +
    'client address (AUTH_FAILURES_PER_MINUTE; a valid token still passes); see Retry-After (seconds).',
  500: 'An unexpected failure; the details are in the service log.',
} as const;

/** The 503 of an operation that only reads: nothing it did needs saying. */
export const READ_UNAVAILABLE =
  'The database is unreachable or did not answer within DATABASE_QUERY_TIMEOUT_MS; retry shortly. ' +
  IDENTITY_PROVIDER_UNAVAILABLE;

/**
 * Documents each failure status of a route with the shared `Error` body and an example of it:
 * a description, or a description and the route's own example message.
 */
export function ApiErrorResponses(
  responses: Record<number, string | [description: string, example: string]>,
): MethodDecorator & ClassDecorator {
  return applyDecorators(
    ...Object.entries(responses).map(([key, value]) => {
      const status = Number(key);
      const [description, message] = typeof value === 'string' ? [value, EXAMPLE_MESSAGES[status]] : value;
      return ApiResponse({
        status,
        description,
        type: ErrorDto,
        ...(HEADERS[status] === undefined ? {} : { headers: HEADERS[status] }),
        ...(message === undefined ? {} : { example: { error: status, message } }),
      });
    }),
  );
}
