import { FastifyInstance } from 'fastify';
import helmet from 'helmet';

/**
 * The docs pages get helmet's defaults, whose CSP the Swagger UI works with (its scripts are
 * files, not inline), minus upgrade-insecure-requests, which would break /docs over plain HTTP.
 */
const docsHeaders = helmet({
  contentSecurityPolicy: { directives: { upgradeInsecureRequests: null, imgSrc: ["'self'", 'data:'] } },
});

/**
 * The JSON API gets the set OWASP's REST Security Cheat Sheet gives for APIs: nothing in a
 * response may run, be framed or be sniffed as another type, over HTTPS only. Headers that only
 * mean something for HTML documents are left off: each costs every client bytes on every response.
 */
const apiHeaders = helmet({
  contentSecurityPolicy: { useDefaults: false, directives: { defaultSrc: ["'none'"], frameAncestors: ["'none'"] } },
  xFrameOptions: { action: 'deny' },
  crossOriginOpenerPolicy: false,
  originAgentCluster: false,
  xDnsPrefetchControl: false,
  xDownloadOptions: false,
  xPermittedCrossDomainPolicies: false,
  xXssProtection: false,
});

/**
 * Security headers through helmet's middleware, each set built once: `@fastify/helmet` would
 * build the middleware again on every request (parsing the CSP each time).
 */
export function addSecurityHeaders(fastify: FastifyInstance, docsPath: string): void {
  fastify.addHook('onRequest', (request, reply, done) => {
    const headers = request.routeOptions.url?.startsWith(docsPath) ? docsHeaders : apiHeaders;
    headers(request.raw, reply.raw, (error?: unknown) => done(error as Error | undefined));
  });
}
