import { FastifyInstance } from 'fastify';
import { Logger } from 'pino';
import { LogConfig } from '../config/app-config';
import { routeTemplateOf } from '../http/route-template';

/**
 * One line per answered request that LOG_REQUESTS chooses: its id, method, URL, route template,
 * status and time in ms. A client's mistake (4xx) is routine traffic at info; only the service's own
 * failures are errors. The choice only decides which requests get a line: each keeps its level, so
 * LOG_LEVEL still hides what is below it. A request that gets no line costs nothing here.
 *
 * The line's shape is fixed below and holds no header, so the logger's redaction (which copies and
 * restores `req` on every line that has one, much of a line's cost) has nothing to find in it: these
 * lines go through a child without it, to the same destination, at the same level and in the same form.
 */
export function logRequests(fastify: FastifyInstance, logger: Logger, config: LogConfig): void {
  if (config.requests === 'off') return;
  const chosen = config.requests === 'failures' ? failuresOrSlowerThan(config.slowMs) : () => true;
  const lines = logger.child({}, { redact: [] });
  fastify.addHook('onResponse', (request, reply, done) => {
    const status = reply.statusCode;
    const failed = status >= 500;
    if (lines.isLevelEnabled(failed ? 'error' : 'info')) {
      const responseTime = reply.elapsedTime;
      if (chosen(status, responseTime)) {
        const line = {
          req: { id: request.id, method: request.method, url: request.url },
          route: routeTemplateOf(request),
          res: { statusCode: status },
          responseTime,
        };
        if (failed) lines.error(line, 'request errored');
        else lines.info(line, 'request completed');
      }
    }
    done();
  });
}

/** LOG_REQUESTS=failures: a 4xx or 5xx, or an answer that took longer than `slowMs`. */
function failuresOrSlowerThan(slowMs: number): (status: number, ms: number) => boolean {
  return (status, ms) => status >= 400 || ms > slowMs;
}
