import { Module } from '@nestjs/common';
import { trace } from '@opentelemetry/api';
import { LoggerModule } from 'nestjs-pino';
import pino, { Logger } from 'pino';
import { AppConfig } from '../config/app-config';

/** `trace_id` and `span_id` of the active span; nothing when there is none (always, with tracing off). */
export function traceFields(): Record<string, string> {
  const span = trace.getActiveSpan();
  if (span === undefined) return {};
  const { traceId, spanId } = span.spanContext();
  return { trace_id: traceId, span_id: spanId };
}

/** DI token of the process's one pino logger (`pino.Logger`). */
export const PINO_LOGGER = Symbol('PINO_LOGGER');

/** JSON lines in production, pretty ones otherwise; the Authorization header redacted wherever it appears. */
export function createPinoLogger(config: AppConfig): Logger {
  return pino({
    level: config.log.level,
    transport:
      config.log.format === 'pretty'
        ? // Colours on a terminal only: a log written to a file or a pipe stays plain text.
          { target: 'pino-pretty', options: { singleLine: true, colorize: Boolean(process.stdout.isTTY) } }
        : undefined,
    // While a span is active (tracing on), every line says which trace and span it belongs to.
    mixin: traceFields,
    // Belt and braces: no line logs headers at all.
    redact: {
      paths: ['req.headers.authorization', 'req.headers.cookie', 'headers.authorization'],
      censor: '[redacted]',
    },
  });
}

/**
 * Nest's own logs through nestjs-pino, on the one pino logger that also writes the request lines
 * (`logRequests`). nestjs-pino's per-request middleware (pino-http, a child logger and an
 * AsyncLocalStorage scope per request) is left out: it halved the throughput of a 401 even with
 * request logs off, and the request id reaches the lines that need it without it.
 */
@Module({
  imports: [
    LoggerModule.forRootAsync({
      providers: [{ provide: PINO_LOGGER, inject: [AppConfig], useFactory: createPinoLogger }],
      inject: [PINO_LOGGER],
      useFactory: (logger: Logger) => ({ pinoHttp: { logger }, forRoutes: [] }),
    }),
  ],
})
export class LoggingModule {}
