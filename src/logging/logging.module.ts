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

/**
 * Where JSON lines go: stdout through pino's asynchronous destination, which gathers lines into
 * writes of 4 KiB (a `write` per line is a large share of a read's CPU) and writes what it holds at least
 * every `LOG_FLUSH_MS`. A line may so be written up to that much later, never lost on a clean exit:
 * `flushLogLines()` on shutdown and on a fatal error (`main.ts`), and pino itself on `exit`.
 */
const LOG_FLUSH_MS = 250;
const destinations = new Set<pino.DestinationStream & { flushSync(): void }>();

/** Writes every line the loggers still hold, synchronously: before the process exits. */
export function flushLogLines(): void {
  for (const destination of destinations) {
    try {
      destination.flushSync();
    } catch {
      // stdout closed (EPIPE), or the stream not open yet: nothing more can be written there.
    }
  }
}

/** JSON lines in production, pretty ones otherwise; the Authorization header redacted wherever it appears. */
export function createPinoLogger(config: AppConfig): Logger {
  const pretty = config.log.format === 'pretty';
  const options: pino.LoggerOptions = {
    level: config.log.level,
    transport: pretty
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
  };
  if (pretty) return pino(options);
  const destination = pino.destination({ dest: 1, sync: false, minLength: 4096, periodicFlush: LOG_FLUSH_MS });
  destinations.add(destination);
  return pino(options, destination);
}

/**
 * Nest's own logs through nestjs-pino, on the one pino logger that also writes the request lines
 * (`logRequests`). nestjs-pino's per-request middleware (pino-http, a child logger and an
 * AsyncLocalStorage scope per request) is left out: every request would pay for them, even with
 * request logs off, and the request id reaches the lines that need it without them.
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
