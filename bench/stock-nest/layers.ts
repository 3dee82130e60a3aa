// The layers a team adds to the stock peer before production, each as its own docs show it: nestjs-pino's
// request line (autoLogging) with the token redacted, a request id, @fastify/helmet, and a prom-client
// histogram by route and status. On with STOCK_NEST_LAYERS=on (bench/run.js's `stock-nest-layered`).
import { randomUUID } from 'node:crypto';
import helmet from '@fastify/helmet';
import { RequestMethod } from '@nestjs/common';
import { NestFastifyApplication } from '@nestjs/platform-fastify';
import { Logger, LoggerModule } from 'nestjs-pino';
import { Histogram, register } from 'prom-client';

export const LAYERED = process.env.STOCK_NEST_LAYERS === 'on';

// Every route: nestjs-pino's default ('{/*splat}') matches no request on this Nest's Fastify adapter.
export const loggerModule = LoggerModule.forRoot({
  pinoHttp: { autoLogging: true, redact: ['req.headers.authorization'] },
  forRoutes: [{ path: '{*splat}', method: RequestMethod.ALL }],
});

/** The request id: the caller's X-Request-Id or a UUID (Fastify's options; pino-http logs Fastify's id). */
export const adapterOptions = LAYERED ? { requestIdHeader: 'x-request-id', genReqId: () => randomUUID() } : {};

export async function addLayers(app: NestFastifyApplication): Promise<void> {
  app.useLogger(app.get(Logger));
  await app.register(helmet);
  const duration = new Histogram({
    name: 'http_request_duration_seconds',
    help: 'HTTP request duration by route and status',
    labelNames: ['method', 'route', 'status_code'],
  });
  const fastify = app.getHttpAdapter().getInstance();
  fastify.addHook('onRequest', (request, reply, done) => {
    void reply.header('x-request-id', request.id);
    done();
  });
  fastify.addHook('onResponse', (request, reply, done) => {
    const labels = { method: request.method, route: request.routeOptions.url ?? 'unmatched' };
    duration.observe({ ...labels, status_code: reply.statusCode }, reply.elapsedTime / 1000);
    done();
  });
  fastify.get('/metrics', async (_request, reply) => reply.type(register.contentType).send(await register.metrics()));
}
