import { FastifyInstance, onRequestHookHandler, RouteOptions } from 'fastify';
import { OpenAPIObject } from '@nestjs/swagger';
import { AccessTokenVerifier } from './access-token.verifier';
import { PublicRouteConfig } from './public.decorator';
import { answerRefusal, Refusal } from './refusal';
import { hasBody } from '../http/early-answer-drain';
import { documentedOperation } from '../common/openapi/documented-operation';

/**
 * Authentication before Nest, in Fastify's hooks, with the same check as `BearerAuthGuard`.
 *
 * - Every operation the API document declares bearer-protected gets an `onRequest` hook of its own
 *   that answers a request without a valid credential at once, with the 401 (or the 429 past
 *   AUTH_FAILURES_PER_MINUTE) that the guard and `AllExceptionsFilter` would send: the same status,
 *   headers and Error body, and the same log line and metrics (Fastify's hooks of every answer). A
 *   failing request then makes no exception, no promise and no Nest context: under a flood of
 *   wrong tokens it costs the least it can. A request that passes goes on to Nest's whole pipeline,
 *   whose guard finds the credential already checked (and says the caller is trusted) and applies
 *   the admin permission.
 * - Fastify reads and parses a body before Nest's guards run, so on its own a malformed, oversized
 *   or wrongly typed body would be answered before the credential is looked at. The `preParsing`
 *   hook checks every other route that is not `@Public()` before any body is read: a request without
 *   a valid credential gets 401 whatever its body, and its body is not read.
 *
 * Routes outside the document (the docs pages, CORS's preflight, undocumented controllers) are left
 * to the guard; unknown routes stay 404. Registered before the app initialises: Nest adds its routes
 * then, and each passes through `onRoute` here.
 */
export function authenticateBeforeBody(
  fastify: FastifyInstance,
  verifier: AccessTokenVerifier,
  document: OpenAPIObject,
): void {
  // A callback hook, not an async one: a static token, and a refusal counted in this process, are
  // settled without a promise.
  const authenticateFirst: onRequestHookHandler = (request, reply, done) => {
    let outcome: Refusal | undefined | Promise<Refusal | undefined>;
    try {
      outcome = verifier.authenticate(request);
    } catch (error) {
      return done(error as Error);
    }
    if (outcome === undefined) return done();
    if (outcome instanceof Refusal) return answerRefusal(reply, outcome);
    outcome.then((refusal) => (refusal === undefined ? done() : answerRefusal(reply, refusal)), done);
  };
  fastify.addHook('onRoute', (route) => {
    if (!bearerProtected(route, document)) return;
    // A new array: Fastify's HEAD route for a GET starts from a copy of the GET's options.
    route.onRequest = [...[route.onRequest ?? []].flat(), authenticateFirst];
  });

  // A callback hook, not an async one: a static token is settled without a promise.
  fastify.addHook('preParsing', (request, _reply, payload, done) => {
    // The body first: a GET has none, and `routeOptions` builds a new object on every read.
    if (!hasBody(request.headers) || request.is404) return done(null, payload);
    if ((request.routeOptions.config as PublicRouteConfig).isPublic === true) return done(null, payload);
    let pending: Promise<void> | undefined;
    try {
      pending = verifier.verifyRequest(request);
    } catch (error) {
      return done(error as Error);
    }
    if (pending === undefined) done(null, payload);
    else pending.then(() => done(null, payload), done);
  });
}

/**
 * Whether the document declares `route` an operation that needs a bearer credential (a HEAD route
 * as its GET), and it is not `@Public()`. The document's security and `@Public()` agree on every
 * operation (test/e2e/openapi.e2e-spec.ts), so this is the guard's own answer for that route.
 */
function bearerProtected(route: RouteOptions, document: OpenAPIObject): boolean {
  if (Array.isArray(route.method) || ((route.config ?? {}) as PublicRouteConfig).isPublic === true) return false;
  const method = route.method === 'HEAD' ? 'GET' : route.method;
  const operation = documentedOperation(document, route.url, method) as { security?: unknown[] } | undefined;
  if (operation === undefined) return false;
  return (operation.security ?? document.security ?? []).length > 0;
}
