import {
  Context,
  context,
  INVALID_SPAN_CONTEXT,
  propagation,
  ROOT_CONTEXT,
  Span,
  SpanOptions,
  SpanStatusCode,
  trace,
  TraceFlags,
} from '@opentelemetry/api';

/**
 * Trace context across the group commit and the outbox. With tracing off, the API is a no-op: no
 * span is active, so nothing is remembered and every span below is a non-recording one. With it on,
 * only a sampled request has a span in its context (`request-spans.ts`): an unsampled one (or a
 * caller not trusted yet) has none, so nothing here does any work for it either.
 */
const remembered = new WeakMap<object, Context>();

/**
 * Whether the environment asks for tracing: `OTEL_EXPORTER_OTLP_ENDPOINT` (or its traces variant),
 * or `OTEL_TRACES_EXPORTER` other than `none`. `src/tracing/tracing.ts` starts the SDK on the same answer.
 */
export function tracingRequested(env: NodeJS.ProcessEnv): boolean {
  const exporter = env.OTEL_TRACES_EXPORTER;
  if (exporter !== undefined && exporter !== '') return exporter !== 'none';
  return (env.OTEL_EXPORTER_OTLP_ENDPOINT ?? env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT ?? '') !== '';
}

/** What became of the sampled spans of this process: sent to the collector, dropped (queue full), or failed. */
export interface SpanTally {
  exported: number;
  dropped: number;
  failed: number;
}

/** Counted by the span processor (`span-pipeline.ts`) while tracing is on; read by the metrics. */
export const spanTally: SpanTally = { exported: 0, dropped: 0, failed: 0 };

/** Read once: with tracing off, the helpers below do nothing at all on the hot paths. */
const TRACING = tracingRequested(process.env);

/** Whether this process traces (the SDK was started: `src/tracing/tracing.ts` asks the same question). */
export function tracingOn(): boolean {
  return TRACING;
}
export const tracer = trace.getTracer('plant-store');

/** What `callerTrusted` does: set by `request-spans.ts` when tracing starts, so nothing with tracing off. */
let trusting: ((request: object) => void) | undefined;

/** Sets what `callerTrusted` does (`request-spans.ts`). */
export function onCallerTrusted(trust: (request: object) => void): void {
  trusting = trust;
}

/**
 * Said by `BearerAuthGuard` once `request`'s credential has passed, the admin permission included:
 * from then on the request may continue the trace its caller sent (`request-spans.ts`). Until then
 * the caller is a stranger, whose trace context is not trusted.
 */
export function callerTrusted(request: object): void {
  if (trusting !== undefined) trusting(request);
}

/** Remembers the caller's context for `work` (a plant on its way into a group commit), when a span is active. */
export function rememberContext(work: object): void {
  if (TRACING && trace.getActiveSpan() !== undefined) remembered.set(work, context.active());
}

/** The context remembered for `work`, if any. */
export function contextOf(work: object): Context | undefined {
  return remembered.get(work);
}

/**
 * `to`, remembered with `from`'s context, if any, and returned: for a result made on the request's
 * behalf (the row a delete removed, whose event joins the delete's trace).
 */
export function passContext<T extends object>(from: object, to: T): T {
  const context = remembered.get(from);
  if (context !== undefined) remembered.set(to, context);
  return to;
}

/**
 * The `traceparent` of `work`'s span (the service's own) as JSON (`{"traceparent": …}`), for the
 * outbox; undefined without one. Only that: no `tracestate` nor baggage, which a caller could have
 * written, ever reaches a webhook receiver.
 */
export function traceCarrierOf(work: object): string | undefined {
  const remembered = contextOf(work);
  if (remembered === undefined) return undefined;
  const carrier: Record<string, string> = {};
  propagation.inject(remembered, carrier);
  return carrier.traceparent === undefined ? undefined : JSON.stringify({ traceparent: carrier.traceparent });
}

/**
 * The context a stored carrier describes (the root context when there is none): its `traceparent`
 * alone, so a row written before the outbox kept only that brings no `tracestate` nor baggage along.
 */
export function contextFromCarrier(carrier: string | undefined | null): Context {
  if (carrier === undefined || carrier === null) return ROOT_CONTEXT;
  try {
    const { traceparent } = JSON.parse(carrier) as { traceparent?: unknown };
    return typeof traceparent === 'string' ? propagation.extract(ROOT_CONTEXT, { traceparent }) : ROOT_CONTEXT;
  } catch {
    return ROOT_CONTEXT;
  }
}

/** What `work` gets when no span is made for it: every call on it does nothing. */
const NO_SPAN = trace.wrapSpanContext(INVALID_SPAN_CONTEXT);

/**
 * Whether `parent` holds a sampled span: ours (a sampled request's) or a remote one (a stored
 * carrier whose `traceparent` says sampled). Spans are only made under such a parent, as pg's
 * `requireParentSpan` does: an unsampled request, and work outside any request (the dispatcher's
 * polls), make none, rather than a trace of their own.
 */
function sampled(parent: Context): boolean {
  const span = trace.getSpan(parent);
  return span !== undefined && (span.spanContext().traceFlags & TraceFlags.SAMPLED) !== 0;
}

/**
 * Whether a span made now, in the active context, would be recorded: tracing is on and a sampled
 * span is active. Lets a hot path skip building a span's name, options and closure for the requests
 * that are not sampled.
 */
export function sampledSpanActive(): boolean {
  return TRACING && sampled(context.active());
}

/**
 * Runs `work` in a span named `name`, child of `parent` (the active context by default), ended when
 * it settles; or without a span when that parent holds no sampled span.
 */
export function inSpan<T>(name: string, options: SpanOptions, parent: Context | undefined, work: (span: Span) => T): T {
  if (!TRACING) return work(NO_SPAN);
  const parentContext = parent ?? context.active();
  if (!sampled(parentContext)) return work(NO_SPAN);
  const span = tracer.startSpan(name, options, parentContext);
  let result: T;
  try {
    result = context.with(trace.setSpan(parentContext, span), () => work(span));
  } catch (error) {
    span.recordException(error as Error);
    span.setStatus({ code: SpanStatusCode.ERROR });
    span.end();
    throw error;
  }
  if (result instanceof Promise) {
    return (result as Promise<unknown>).then(
      (value: unknown) => {
        span.end();
        return value;
      },
      (error: unknown) => {
        span.recordException(error as Error);
        span.setStatus({ code: SpanStatusCode.ERROR });
        span.end();
        throw error;
      },
    ) as T;
  }
  span.end();
  return result;
}
