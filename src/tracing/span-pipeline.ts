import { Attributes, Counter, createNoopMeter, DiagLogger, Meter, MeterProvider } from '@opentelemetry/api';
import { BatchSpanProcessor, BatchSpanProcessorOptions, SpanExporter, SpanProcessor } from '@opentelemetry/sdk-trace';
import pino from 'pino';
import { SpanTally } from './trace-context';

/**
 * The batch processor's sizes, each unless its standard variable is set. The SDK's defaults (a
 * queue of 2048, batches of 512, every 5 s) drop spans of a busy read load sampled in full: at a
 * couple of spans a request and thousands of requests a second, the queue fills while one batch
 * is on its way. A batch of 2048 leaves as soon as it is full; the queue holds eight of them
 * (16384 spans, about 16 MiB at the most) while the collector answers.
 */
export const BATCH_DEFAULTS = {
  maxQueueSize: { variable: 'OTEL_BSP_MAX_QUEUE_SIZE', value: 16384 },
  maxExportBatchSize: { variable: 'OTEL_BSP_MAX_EXPORT_BATCH_SIZE', value: 2048 },
  // At a low rate a span leaves within a second rather than five.
  scheduledDelayMillis: { variable: 'OTEL_BSP_SCHEDULE_DELAY', value: 1000 },
  // The SDK's own default; the trace SDK 3 reads no variable, so this one is read here too.
  exportTimeoutMillis: { variable: 'OTEL_BSP_EXPORT_TIMEOUT', value: 30000 },
} as const;

/** The SDK's count of the spans its processor has done with (self-observability), by outcome. */
const PROCESSED = 'otel.sdk.processor.span.processed';

/**
 * The batch span processor for `exporter`, sized by `BATCH_DEFAULTS` or the `OTEL_BSP_*` variables,
 * which counts into `tally` what becomes of each sampled span: exported, dropped (the queue was full)
 * or failed (the collector refused it or did not answer).
 */
export function spanProcessorFromEnv(exporter: SpanExporter, env: NodeJS.ProcessEnv, tally: SpanTally): SpanProcessor {
  const options: BatchSpanProcessorOptions = { exporter, selfObsMeterProvider: counting(tally) };
  for (const [key, { variable, value }] of Object.entries(BATCH_DEFAULTS)) {
    const given = Number((env[variable] ?? '').trim() || Number.NaN);
    options[key as keyof typeof BATCH_DEFAULTS] = Number.isFinite(given) ? given : value;
  }
  return new BatchSpanProcessor(options);
}

/**
 * A meter provider that keeps only the processor's span count, into `tally` (the processor's
 * self-observability option is the one place that knows when it drops a span); every other
 * instrument is the no-op one.
 */
function counting(tally: SpanTally): MeterProvider {
  const noop = createNoopMeter();
  const processed: Counter = {
    add(value: number, attributes?: Attributes) {
      const error = attributes?.['error.type'];
      if (error === undefined) tally.exported += value;
      else if (error === 'queue_full') tally.dropped += value;
      else tally.failed += value;
    },
  };
  const meter: Meter = Object.assign(Object.create(noop) as Meter, {
    createCounter: (name: string, options?: object) =>
      name === PROCESSED ? processed : noop.createCounter(name, options),
  });
  return { getMeter: () => meter };
}

/**
 * The SDK's own warnings and errors (an export that failed, spans dropped) as JSON log lines, beside
 * the service's own (the app's logger does not exist yet when the SDK starts).
 */
export function diagnosticsLogger(): DiagLogger {
  const logger = pino({ level: 'warn' }).child({ context: 'OpenTelemetry' });
  const write =
    (level: 'error' | 'warn') =>
    (message: string, ...args: unknown[]) =>
      logger[level](args.length === 0 ? message : `${message} ${args.map(String).join(' ')}`);
  const ignore = () => undefined;
  return { error: write('error'), warn: write('warn'), info: ignore, debug: ignore, verbose: ignore };
}
