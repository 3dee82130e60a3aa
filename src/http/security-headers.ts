import { IncomingMessage, ServerResponse } from 'node:http';
import { FastifyRequest } from 'fastify';
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
 * response may run, be framed, be sniffed as another type or be stored by a cache, over HTTPS
 * only; helmet's Referrer-Policy and Cross-Origin-Resource-Policy stay too. Headers that only mean
 * something for HTML documents are left off: each costs every client bytes on every response.
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
 * Security headers from helmet: the set for a request, the docs pages' under `docsPath`, the API's
 * everywhere else. Every header its middleware sets is a constant of its options, so each set is
 * read off the middleware once, at start-up, and each response gets it with one `reply.headers()`:
 * running helmet's middleware chain per request is a visible share of a cheap answer's CPU, and
 * `@fastify/helmet` would even build the middleware per request.
 */
export function securityHeadersFor(docsPath: string): (request: FastifyRequest) => Readonly<Record<string, string>> {
  const docs = headersSetBy(docsHeaders);
  const api = API_SECURITY_HEADERS;
  // The route decides; only a URL under the docs path can match a docs route, so the others
  // (every API request) never read `routeOptions`, which builds a new object on every read.
  return (request) => (request.url.startsWith(docsPath) && request.routeOptions.url?.startsWith(docsPath) ? docs : api);
}

/** Runs a helmet middleware once against a response that only records the headers set on it. */
function headersSetBy(middleware: ReturnType<typeof helmet>): Readonly<Record<string, string>> {
  const headers: Record<string, string> = {};
  const recorder = {
    // Kept lowercase, as Fastify stores them: `reply.header()` then has no name to lowercase per request.
    setHeader: (name: string, value: string) => void (headers[name.toLowerCase()] = value),
    // helmet removes X-Powered-By, which Fastify never sets.
    removeHeader: () => undefined,
  };
  let finished = false;
  middleware({} as IncomingMessage, recorder as unknown as ServerResponse, (error?: unknown) => {
    if (error !== undefined) throw new Error('helmet failed to set its headers', { cause: error });
    finished = true;
  });
  // helmet's middleware is synchronous; if an upgrade ever made it otherwise, fail at start-up.
  if (!finished) throw new Error('helmet did not finish synchronously: its headers cannot be read once');
  return Object.freeze(headers);
}

/**
 * The headers of every API answer, read off helmet once at load: also those Fastify and Node answer
 * before a route runs (`connection-errors.ts`). helmet has no Cache-Control; no-store keeps plants,
 * errors and health answers out of every cache.
 */
export const API_SECURITY_HEADERS: Readonly<Record<string, string>> = Object.freeze({
  ...headersSetBy(apiHeaders),
  'cache-control': 'no-store',
});
