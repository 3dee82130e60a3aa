import { FastifyInstance } from 'fastify';
import { AccessTokenVerifier } from './access-token.verifier';
import { PublicRouteConfig } from './public.decorator';

/**
 * Fastify reads and parses a body before Nest's guards run, so on its own a malformed, oversized
 * or wrongly typed body would be answered before the credential is looked at. This `preParsing`
 * hook applies the same check as `BearerAuthGuard` to every protected route before any body is
 * read: a request without a valid credential gets 401 whatever its body, and its body is not read.
 * Body-less requests are left to the guard; unknown routes stay 404.
 */
export function authenticateBeforeBody(fastify: FastifyInstance, verifier: AccessTokenVerifier): void {
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

function hasBody(headers: Record<string, string | string[] | undefined>): boolean {
  return headers['transfer-encoding'] !== undefined || (headers['content-length'] ?? '0') !== '0';
}
