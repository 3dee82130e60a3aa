import { createServer, Server } from 'node:http';
import { FastifyInstance } from 'fastify';
import { AppConfig } from '../config/app-config';
import { ConfigError } from '../config/config.error';
import { routeTemplateOf } from '../http/route-template';
import { MetricsService } from './metrics.service';

/**
 * Records every answered request, and with METRICS_PORT serves `GET /metrics` on that port
 * without a token (keep that port off the load balancer); otherwise `MetricsController` serves it.
 * Returns the extra server, if any, for shutdown.
 */
export async function setupMetrics(
  fastify: FastifyInstance,
  metrics: MetricsService,
  config: AppConfig,
): Promise<Server | undefined> {
  fastify.addHook('onResponse', (request, reply, done) => {
    metrics.observeRequest(
      request.method,
      routeTemplateOf(request) ?? 'unmatched',
      reply.statusCode,
      reply.elapsedTime / 1000,
    );
    done();
  });

  if (config.metrics.port === undefined) return undefined;

  const server = createServer((request, response) => {
    if (request.method !== 'GET' || request.url !== '/metrics') {
      response.writeHead(404, { 'content-type': 'application/json' }).end('{"error":404,"message":"Not found"}');
      return;
    }
    metrics.registry.metrics().then(
      (text) => response.writeHead(200, { 'content-type': metrics.registry.contentType }).end(text),
      () =>
        response
          .writeHead(500, { 'content-type': 'application/json' })
          .end('{"error":500,"message":"Internal server error"}'),
    );
  });
  // A port that cannot be bound fails start-up with a line naming the setting, rather than waiting forever.
  await new Promise<void>((resolve, reject) => {
    server.once('error', (error: NodeJS.ErrnoException) =>
      reject(
        new ConfigError(
          `Invalid configuration: METRICS_PORT ${config.metrics.port} on ${config.host} cannot be listened on (${error.code ?? error.message})`,
        ),
      ),
    );
    server.listen(config.metrics.port, config.host, resolve);
  });
  return server;
}
