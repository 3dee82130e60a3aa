/**
 * OpenTelemetry tracing, off by default and free when off: the SDK is loaded only when the standard
 * variables ask for it (`OTEL_EXPORTER_OTLP_ENDPOINT` or `OTEL_TRACES_EXPORTER`, other than `none`).
 * The standard `OTEL_*` names set the rest (`OTEL_SERVICE_NAME`, `OTEL_TRACES_SAMPLER`,
 * `OTEL_RESOURCE_ATTRIBUTES`, the exporter's protocol, endpoint, headers and timeout, `OTEL_BSP_*`).
 * The trace SDK alone (`sdk-trace`, with the AsyncLocalStorage context manager), not `sdk-node`, which
 * would ship metrics, logs and gRPC exporters the service does not use. The trace SDK 3 reads no
 * variable itself: the sampler's and the batch processor's are read here (`sampler-from-env.ts`,
 * `span-pipeline.ts`), the exporters and the resource detectors still read theirs.
 *
 * What it costs is decided per request, and an unsampled request costs next to nothing: the server
 * span is ours, made from Fastify's first hook once the sampler has decided (`request-spans.ts`;
 * for a caller that sent a `traceparent`, once its credential has passed), and nothing else wraps a
 * request. pg, ioredis and undici are instrumented; their spans, and ours
 * for SQLite, are made only under a sampled parent.
 *
 * `main.ts` imports this first, before Nest, Fastify, pg or undici are loaded, as the
 * instrumentations require (they patch modules as they are first required).
 */
import { context, diag, DiagLogLevel, propagation, trace } from '@opentelemetry/api';
import { subscribe } from 'node:diagnostics_channel';
// Used as types only (so erased at build): nothing of the SDK is loaded unless tracing is on.
import * as OtlpHttp from '@opentelemetry/exporter-trace-otlp-http';
import * as OtlpProto from '@opentelemetry/exporter-trace-otlp-proto';
import * as ContextAsyncHooks from '@opentelemetry/context-async-hooks';
import * as Core from '@opentelemetry/core';
import * as Instrumentation from '@opentelemetry/instrumentation';
import * as IORedis from '@opentelemetry/instrumentation-ioredis';
import * as Pg from '@opentelemetry/instrumentation-pg';
import * as Undici from '@opentelemetry/instrumentation-undici';
import * as Resources from '@opentelemetry/resources';
import * as TraceSdk from '@opentelemetry/sdk-trace';
import { FastifyInstance } from 'fastify';
import { originOf } from '../common/networks/host-of';
import * as RequestSpans from './request-spans';
import * as SamplerFromEnv from './sampler-from-env';
import * as SamplingFirstModule from './sampling-first';
import * as SpanPipeline from './span-pipeline';
import { SpanTally, spanTally, tracingRequested } from './trace-context';

let provider: TraceSdk.TracerProvider | undefined;
/**
 * The exporter the standard variables ask for: OTLP over HTTP, protobuf (the default) or JSON
 * (`OTEL_EXPORTER_OTLP_PROTOCOL`, or its traces variant), or `console`. The exporter reads the
 * endpoint, headers and timeout variables itself. gRPC is not shipped (its packages would make the
 * image much larger); asking for it stops start-up with one line.
 */
function exporterFromEnv(env: NodeJS.ProcessEnv): TraceSdk.SpanExporter {
  /* eslint-disable @typescript-eslint/no-require-imports -- loaded only when tracing is on */
  if (env.OTEL_TRACES_EXPORTER === 'console') {
    return new (require('@opentelemetry/sdk-trace') as typeof TraceSdk).ConsoleSpanExporter();
  }
  const protocol = env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL || env.OTEL_EXPORTER_OTLP_PROTOCOL || 'http/protobuf';
  if (protocol === 'http/json') {
    return new (require('@opentelemetry/exporter-trace-otlp-http') as typeof OtlpHttp).OTLPTraceExporter();
  }
  if (protocol === 'http/protobuf') {
    return new (require('@opentelemetry/exporter-trace-otlp-proto') as typeof OtlpProto).OTLPTraceExporter();
  }
  console.error(
    `Invalid configuration: OTEL_EXPORTER_OTLP_PROTOCOL must be http/protobuf or http/json (${protocol} is not supported)`,
  );
  process.exit(1);
}

function startTracing(): void {
  const { TracerProvider } = require('@opentelemetry/sdk-trace') as typeof TraceSdk;
  const { AsyncLocalStorageContextManager } = require('@opentelemetry/context-async-hooks') as typeof ContextAsyncHooks;
  const { defaultResource, detectResources, envDetector, hostDetector, processDetector } =
    require('@opentelemetry/resources') as typeof Resources;
  const { registerInstrumentations } = require('@opentelemetry/instrumentation') as typeof Instrumentation;
  const { PgInstrumentation } = require('@opentelemetry/instrumentation-pg') as typeof Pg;
  const { IORedisInstrumentation } = require('@opentelemetry/instrumentation-ioredis') as typeof IORedis;
  const { UndiciInstrumentation } = require('@opentelemetry/instrumentation-undici') as typeof Undici;
  const { diagnosticsLogger, spanProcessorFromEnv } = require('./span-pipeline') as typeof SpanPipeline;
  const { traceRequests } = require('./request-spans') as typeof RequestSpans;
  const { SamplingFirst } = require('./sampling-first') as typeof SamplingFirstModule;
  const { samplerFromEnv } = require('./sampler-from-env') as typeof SamplerFromEnv;
  const { W3CTraceContextPropagator } = require('@opentelemetry/core') as typeof Core;
  /* eslint-enable @typescript-eslint/no-require-imports */
  // The SDK's own warnings and errors (a failed export, spans dropped) are written, not swallowed.
  diag.setLogger(diagnosticsLogger(), DiagLogLevel.WARN);
  // The sampler the standard variables name (OTEL_TRACES_SAMPLER and its argument), of the SDK's own
  // samplers; asked first for each request (`sampling-first.ts`).
  const sampling = new SamplingFirst(samplerFromEnv(process.env));
  provider = new TracerProvider({
    // OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES (envDetector), the host and the process.
    resource: defaultResource().merge(detectResources({ detectors: [envDetector, hostDetector, processDetector] })),
    sampler: sampling.sampler,
    idGenerator: sampling,
    spanProcessors: [spanProcessorFromEnv(exporterFromEnv(process.env), process.env, spanTally)],
  });
  // The global provider, AsyncLocalStorage context, and W3C trace context propagation: `traceparent`
  // and `tracestate` only. Not W3C baggage: nothing here reads a caller's baggage, and none is ever
  // sent on (to a webhook receiver, an identity provider).
  trace.setGlobalTracerProvider(provider);
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  // The server span of each request, from the hooks of the Fastify instance Nest makes (Fastify
  // announces each new instance on this channel).
  const tracer = provider.getTracer('plant-store');
  subscribe('fastify.initialization', (message) =>
    traceRequests((message as { fastify: FastifyInstance }).fastify, tracer, sampling),
  );
  registerInstrumentations({
    tracerProvider: provider,
    instrumentations: [
      new PgInstrumentation({ requireParentSpan: true }),
      new IORedisInstrumentation({ requireParentSpan: true }),
      // The webhook's requests (undici), inside a delivery's span: a client span each, and
      // `traceparent` on the request. The endpoint's origin only: its path and query may hold a credential.
      new UndiciInstrumentation({ startSpanHook: originOnly, requireParentforSpans: true }),
    ],
  });
}

/**
 * The attributes that replace, on an undici client span, those that would carry the request's path
 * and query (`url.full`, `url.path`, `url.query`): `url.full` is the origin, the others are left out
 * (an undefined attribute is not set). `url.scheme`, `server.address` and `server.port` stay; the
 * span's name is the method alone.
 */
export function originOnly(request: { origin: string | URL }): Record<string, string | undefined> {
  return { 'url.full': originOf(String(request.origin)), 'url.path': undefined, 'url.query': undefined };
}

/**
 * Flushes the spans still buffered and stops the provider; called last at shutdown. Resolves to
 * what became of the spans since the start, and why the last flush failed if it did (undefined when
 * tracing is off); never rejects.
 */
export async function shutdownTracing(): Promise<(SpanTally & { flushError?: string }) | undefined> {
  if (provider === undefined) return undefined;
  try {
    await provider.shutdown();
    return { ...spanTally };
  } catch (error) {
    return { ...spanTally, flushError: (error as Error).message };
  }
}

if (tracingRequested(process.env)) startTracing();
