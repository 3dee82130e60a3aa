import { randomUUID } from 'node:crypto';
import { IncomingMessage } from 'node:http';
import { FastifyAdapter, NestFastifyApplication } from '@nestjs/platform-fastify';
import { SwaggerModule } from '@nestjs/swagger';
import { Logger } from 'pino';
import { AccessTokenVerifier } from './auth/access-token.verifier';
import { authenticateBeforeBody } from './auth/authenticate-before-body.hook';
import { AppConfig, TrustProxy } from './config/app-config';
import { ShutdownSignal } from './lifecycle/shutdown-signal';
import { parseJsonBody } from './http/json-body.parser';
import { securityHeadersFor } from './http/security-headers';
import { serveOnlyWhatTheDocsPageLoads } from './http/docs-files';
import { drainLimits, drainThenClose, hasBody } from './http/early-answer-drain';
import {
  clientErrorHandler,
  frameworkErrors,
  MAX_HEADER_BYTES,
  MAX_PARAM_LENGTH,
} from './error-responses/connection-errors';
import { PINO_LOGGER } from './logging/logging.module';
import { logRequests } from './logging/request-logging';
import { MetricsService } from './metrics/metrics.service';
import { setupMetrics } from './metrics/metrics.setup';
import { createApiDocument } from './api-document';
import { serializeResponsesAsDocumented } from './common/serialization/documented-responses';

// A caller's X-Request-Id is kept only if it is short and plain; otherwise a new one is made.
const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;
// The Swagger UI; the document is at /docs-json and /docs-yaml.
const DOCS_PATH = 'docs';

/** The Fastify adapter: request ids, and the server timeouts for running behind a load balancer. */
export function createFastifyAdapter(config: AppConfig): FastifyAdapter {
  return new FastifyAdapter({
    requestIdHeader: false,
    // Whether X-Forwarded-For gives `request.ip` (which the rate limit and the logs use), from which hops.
    trustProxy: fastifyTrustProxy(config.trustProxy),
    genReqId: (raw: IncomingMessage) => {
      const given = raw.headers['x-request-id'];
      return typeof given === 'string' && REQUEST_ID.test(given) ? given : randomUUID();
    },
    // Longer than the balancer's idle timeout, so the balancer, not us, closes idle connections.
    keepAliveTimeout: config.timeouts.keepAliveMs,
    requestTimeout: config.timeouts.requestMs,
    // While closing, requests on open connections are still served; new connections are refused.
    return503OnClosing: false,
    // Node checks REQUEST_TIMEOUT_MS every this often (its default, 30 s, would let a stalled body sit 30 s longer).
    http: { connectionsCheckingInterval: Math.min(1000, config.timeouts.requestMs), maxHeaderSize: MAX_HEADER_BYTES },
    routerOptions: { maxParamLength: MAX_PARAM_LENGTH },
    // What Node or Fastify's router answer before Nest sees a request: in the Error shape too.
    clientErrorHandler: clientErrorHandler(config.timeouts.requestMs),
    frameworkErrors,
  });
}

/** TRUST_PROXY as Fastify takes it; a hop count as the function Fastify itself would make of it. */
function fastifyTrustProxy(trust: TrustProxy): boolean | string[] | ((address: string, hop: number) => boolean) {
  if (trust === false) return false;
  if (typeof trust === 'number') return (_address, hop) => hop < trust;
  return [...trust];
}

/**
 * Everything about the app that is not a provider: security headers, CORS, the body parser, the
 * early auth hook, metrics and the docs. `main.ts` and the tests both call it, so tests run what ships.
 */
export async function configureApp(app: NestFastifyApplication): Promise<NestFastifyApplication> {
  const config = app.get(AppConfig);
  const verifier = app.get(AccessTokenVerifier);
  const fastify = app.getHttpAdapter().getInstance();
  // Headers, like the whole request, within REQUEST_TIMEOUT_MS. Node counts both from the start of each
  // request, not from when a kept-alive connection went idle, so this cannot race the keep-alive
  // timeout; and a headers timeout above the request timeout turns the request timeout off (a
  // stalled body then held its connection until the client gave up: found by the 408 test).
  app.getHttpServer().headersTimeout = config.timeouts.requestMs;

  logRequests(fastify, app.get<Logger>(PINO_LOGGER), config.log);
  const shutdown = app.get(ShutdownSignal);
  // The headers of every answer, in one hook (each hook is a step of every request): its request
  // id, and the security headers.
  const securityHeaders = securityHeadersFor(`/${DOCS_PATH}`);
  fastify.addHook('onRequest', (request, reply, done) => {
    void reply.header('x-request-id', request.id).headers(securityHeaders(request));
    done();
  });
  // While shutting down, every answer tells the client not to send another request on this connection.
  // An answer given before its body has arrived (413, 415, a 401 before the body) closes it too, once
  // the rest of the body is read (API.md, "Answers before the body").
  const drain = drainLimits(config.bodyLimit);
  fastify.addHook('onSend', (request, reply, payload, done) => {
    // `complete` is Node's (app.inject's stand-in request has none, and no body still arriving). A
    // request without a body is not complete yet while it is answered at once, from the hooks that
    // run as its headers are parsed (a 404, a 401 before Nest): its connection stays open.
    const early = request.raw.complete === false && hasBody(request.headers);
    if (shutdown.raised || early) void reply.header('connection', 'close');
    if (early) drainThenClose(request.raw, request.id, reply.statusCode, drain);
    done(null, payload);
  });
  if (config.corsOrigins.length > 0) {
    app.enableCors({
      origin: [...config.corsOrigins],
      allowedHeaders: ['Authorization', 'Content-Type', 'X-Request-Id'],
      // Link carries the next page of GET /plants; a browser client reads only the headers listed here.
      exposedHeaders: ['X-Request-Id', 'Retry-After', 'Link'],
    });
  }

  // Only JSON is accepted: any other content type (text/plain included) is a 415. Nest 12 adds its
  // default parsers (JSON and, new, urlencoded) at init unless they count as registered: so they do.
  (app.getHttpAdapter() as FastifyAdapter).registerParserMiddleware();
  fastify.removeAllContentTypeParsers();
  app.useBodyParser('application/json', { bodyLimit: config.bodyLimit }, (_request, body, done) => {
    try {
      done(null, parseJsonBody(body));
    } catch (error) {
      done(error as Error, undefined);
    }
  });

  const metricsServer = await setupMetrics(fastify, app.get(MetricsService), config);
  if (metricsServer) fastify.addHook('onClose', (_instance, done) => void metricsServer.close(() => done()));

  const document = createApiDocument(app);
  // The document says which operations need a credential: those are refused before Nest's pipeline.
  authenticateBeforeBody(fastify, verifier, document);
  // Responses that carry an int64 are written by a serializer compiled from their documented schema.
  serializeResponsesAsDocumented(fastify, document);
  serveOnlyWhatTheDocsPageLoads(fastify, DOCS_PATH);
  SwaggerModule.setup(DOCS_PATH, app, document, {
    jsonDocumentUrl: 'docs-json',
    yamlDocumentUrl: 'docs-yaml',
    // A token typed into the UI lives in the page only, never in the browser's storage.
    swaggerOptions: { persistAuthorization: false },
  });
  return app;
}
