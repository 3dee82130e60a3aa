import { OpenAPIObject, OperationObject, ParameterObject, ResponseObject } from '@nestjs/swagger';
import { MAX_HEADER_BYTES, MAX_PARAM_LENGTH } from '../error-responses/connection-errors';

/**
 * What the service adds to every answer of every operation, declared once here rather than by each
 * resource, so a new resource's operations carry them too:
 *
 * - `Access-Control-Allow-Origin`, which CORS (CORS_ORIGINS) writes in an `onRequest` hook: on every
 *   answer except those given before any hook runs (408 and 431 on the socket, 414 by the router).
 * - `X-RateLimit-*`, which the rate limit (RATE_LIMIT_PER_MINUTE, `PrincipalThrottlerGuard`) writes
 *   once it has counted the request: on the answers of the operations it counts (the bearer-protected
 *   ones; the public probes are `@SkipThrottle`), unless the request was answered before it ran
 *   (see BEFORE_RATE_LIMIT).
 * - a 500, which `AllExceptionsFilter` can answer on any route.
 * - a `maxLength` on string path parameters: the router refuses longer ones (414).
 */
export function declareServiceResponses(document: OpenAPIObject): OpenAPIObject {
  document.components = { ...document.components, headers: { ...document.components?.headers, ...HEADERS } };
  for (const pathItem of Object.values(document.paths)) {
    for (const method of METHODS) {
      const operation = pathItem[method];
      if (operation !== undefined) declareOnOperation(operation);
    }
  }
  return document;
}

const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'] as const;

/** Answered before any Fastify hook: no CORS header. */
const BEFORE_HOOKS = new Set(['408', '414', '431']);

/**
 * Answered before the rate limit counts the request: Node's and the router's answers, the body
 * parser's (413, 415), the bearer guard's (401, 403). A 400 may come from the body parser too (then
 * without the headers) or from validation, after the count (with them): declared, as they can come.
 */
export const BEFORE_RATE_LIMIT = new Set([...BEFORE_HOOKS, '401', '403', '413', '415']);

const ref = (name: keyof typeof HEADERS) => ({ $ref: `#/components/headers/${name}` });

/** The rate limit's ceiling (RATE_LIMIT_PER_MINUTE is validated to 1…1,000,000) and its window, in seconds. */
const MAX_RATE_LIMIT = 1_000_000;
const RATE_LIMIT_WINDOW_SECONDS = 60;

const HEADERS = {
  'Access-Control-Allow-Origin': {
    description:
      'Only when CORS_ORIGINS is set and the request came with one of those origins: that origin. Browsers ' +
      'may then also read X-Request-Id, Retry-After and Link (Access-Control-Expose-Headers).',
    // The request's own Origin, echoed: it fitted in the request's headers.
    schema: { type: 'string', format: 'uri', maxLength: MAX_HEADER_BYTES, example: 'https://app.example' },
  },
  'X-RateLimit-Limit': {
    description:
      'Only when RATE_LIMIT_PER_MINUTE is set: the requests per minute this token may make (all operations).',
    schema: { type: 'integer', format: 'int32', minimum: 1, maximum: MAX_RATE_LIMIT, example: 600 },
  },
  'X-RateLimit-Remaining': {
    description: 'Only when RATE_LIMIT_PER_MINUTE is set: the requests left in the current minute.',
    schema: { type: 'integer', format: 'int32', minimum: 0, maximum: MAX_RATE_LIMIT, example: 599 },
  },
  'X-RateLimit-Reset': {
    description: 'Only when RATE_LIMIT_PER_MINUTE is set: the seconds until the current minute ends.',
    schema: { type: 'integer', format: 'int32', minimum: 0, maximum: RATE_LIMIT_WINDOW_SECONDS, example: 42 },
  },
} as const;

const INTERNAL_ERROR: ResponseObject = {
  description: 'An unexpected failure; the details are in the service log.',
  content: {
    'application/json': {
      schema: { $ref: '#/components/schemas/Error' },
      example: { error: 500, message: 'Internal server error' },
    },
  },
};

function declareOnOperation(operation: OperationObject): void {
  // Public operations say so with `security: []`; only they are not counted.
  const rateLimited = operation.security === undefined || operation.security.length > 0;
  operation.responses['500'] ??= INTERNAL_ERROR;
  for (const [status, response] of Object.entries(operation.responses) as [string, ResponseObject][]) {
    if (BEFORE_HOOKS.has(status)) continue;
    const headers = { ...response.headers };
    if (rateLimited && !BEFORE_RATE_LIMIT.has(status)) {
      Object.assign(headers, {
        'X-RateLimit-Limit': ref('X-RateLimit-Limit'),
        'X-RateLimit-Remaining': ref('X-RateLimit-Remaining'),
        'X-RateLimit-Reset': ref('X-RateLimit-Reset'),
      });
    }
    headers['Access-Control-Allow-Origin'] = ref('Access-Control-Allow-Origin');
    operation.responses[status] = { ...response, headers };
  }
  for (const parameter of (operation.parameters ?? []) as ParameterObject[]) {
    const schema = parameter.schema as { type?: string; maxLength?: number } | undefined;
    if (parameter.in === 'path' && schema?.type === 'string') schema.maxLength ??= MAX_PARAM_LENGTH;
  }
}
