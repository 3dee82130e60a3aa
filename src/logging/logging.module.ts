import { IncomingMessage } from 'node:http';
import { Module } from '@nestjs/common';
import { LoggerModule } from 'nestjs-pino';
import { Options } from 'pino-http';
import { AppConfig } from '../config/app-config';

/** The raw request as `configureApp` marks it: its id, and its route template (`/plants`). */
export interface RoutedRequest extends IncomingMessage {
  routeTemplate?: string;
}

/** pino through nestjs-pino: one JSON line per request, redacted, JSON in production, pretty otherwise. */
export function pinoHttpOptions(config: AppConfig): Options {
  return {
    level: config.log.level,
    transport:
      config.log.format === 'pretty'
        ? { target: 'pino-pretty', options: { singleLine: true, colorize: true } }
        : undefined,
    // Belt and braces: the serializers below log no headers at all.
    redact: {
      paths: ['req.headers.authorization', 'req.headers.cookie', 'headers.authorization'],
      censor: '[redacted]',
    },
    // Fastify's genReqId (createFastifyAdapter) validated or made it.
    genReqId: (req) => req.id,
    // Called at the start (no route yet) and at the end of a request; only the end knows the route.
    customProps: (req: RoutedRequest) => (req.routeTemplate === undefined ? {} : { route: req.routeTemplate }),
    // A client's mistake (4xx) is routine traffic; only the service's own failures are errors.
    customLogLevel: (_req, res, error) => (error || res.statusCode >= 500 ? 'error' : 'info'),
    serializers: {
      req: (req: { id: string; method: string; url: string }) => ({ id: req.id, method: req.method, url: req.url }),
      res: (res: { statusCode: number }) => ({ statusCode: res.statusCode }),
    },
  };
}

@Module({
  imports: [
    LoggerModule.forRootAsync({
      inject: [AppConfig],
      useFactory: (config: AppConfig) => ({ pinoHttp: pinoHttpOptions(config) }),
    }),
  ],
})
export class LoggingModule {}
