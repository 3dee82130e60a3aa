import { FastifyInstance } from 'fastify';
import { Logger } from 'pino';
import { routeTemplateOf } from '../platform/route-template';

/**
 * One line per answered request: its id, method, URL, route template, status and time in ms.
 * A client's mistake (4xx) is routine traffic at info; only the service's own failures are errors.
 * With the level above info, a request costs nothing here.
 */
export function logRequests(fastify: FastifyInstance, logger: Logger): void {
  fastify.addHook('onResponse', (request, reply, done) => {
    const failed = reply.statusCode >= 500;
    if (logger.isLevelEnabled(failed ? 'error' : 'info')) {
      const line = {
        req: { id: request.id, method: request.method, url: request.url },
        route: routeTemplateOf(request),
        res: { statusCode: reply.statusCode },
        responseTime: reply.elapsedTime,
      };
      if (failed) logger.error(line, 'request errored');
      else logger.info(line, 'request completed');
    }
    done();
  });
}
