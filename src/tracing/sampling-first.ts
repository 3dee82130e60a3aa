import { Context, isSpanContextValid, Span, SpanKind, TimeInput, trace, Tracer } from '@opentelemetry/api';
import { isTracingSuppressed } from '@opentelemetry/core';
import { IdGenerator, RandomIdGenerator, Sampler, SamplingDecision } from '@opentelemetry/sdk-trace';

/**
 * The sampling decision taken before any span is made, so that an unsampled request costs only the
 * decision: no span, span id, attributes or SDK metrics (the SDK's `startSpan` makes all of them, and a
 * non-recording span, before it can say no).
 *
 * It is the tracer provider's id generator too: when a root span is to be sampled, the trace id the
 * sampler decided on is the one the SDK's `startSpan`, called at once after, takes for it. The SDK then
 * asks the same sampler the same question and gets the same answer. So the sampler must decide from
 * the parent and the trace id alone, as those the standard variables name do (always on or off, trace
 * id ratio, and their parent-based forms); a sampler that counts, limits a rate or writes `tracestate`
 * would be asked twice for each sampled span.
 */
export class SamplingFirst implements IdGenerator {
  private readonly random = new RandomIdGenerator();
  /** The trace id decided on for the root span being started. */
  private decided: string | undefined;

  constructor(readonly sampler: Sampler) {}

  /**
   * A recording span named `name` of `kind`, child of `parent`'s span (or a root), from `tracer` (one
   * of the provider this is the id generator of), started at `startTime` (now by default); undefined,
   * with nothing made, when it is not sampled.
   */
  startSpan(tracer: Tracer, name: string, kind: SpanKind, parent: Context, startTime?: TimeInput): Span | undefined {
    if (isTracingSuppressed(parent)) return undefined;
    const parentSpan = trace.getSpanContext(parent);
    const root = parentSpan === undefined || !isSpanContextValid(parentSpan);
    const traceId = root ? this.random.generateTraceId() : parentSpan.traceId;
    const { decision } = this.sampler.shouldSample(parent, traceId, name, kind, {}, []);
    if (decision === SamplingDecision.NOT_RECORD) return undefined;
    this.decided = root ? traceId : undefined;
    try {
      const span = tracer.startSpan(name, { kind, startTime }, parent);
      return span.isRecording() ? span : undefined;
    } finally {
      // Taken by the SDK's startSpan, or never asked for: never left for another span.
      this.decided = undefined;
    }
  }

  generateTraceId(): string {
    return this.decided ?? this.random.generateTraceId();
  }

  generateSpanId(): string {
    return this.random.generateSpanId();
  }
}
