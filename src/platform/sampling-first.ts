import { Context, isSpanContextValid, SpanKind, trace } from '@opentelemetry/api';
import { IdGenerator, RandomIdGenerator, Sampler, SamplingDecision } from '@opentelemetry/sdk-trace-base';

const NO_ATTRIBUTES = Object.freeze({});
const NO_LINKS = Object.freeze([]) as unknown as [];

/**
 * The sampling decision taken before any span is made, so that an unsampled request costs only the
 * decision: no span, span id, attributes or SDK metrics (the SDK's `startSpan` makes all of them, and a
 * non-recording span, before it can say no).
 *
 * It is the tracer provider's id generator too: when a root span is to be sampled, the trace id the
 * sampler decided on is the one the SDK's `startSpan`, called at once after, takes for it. The SDK then
 * asks the same sampler the same question and gets the same answer: the samplers the standard
 * variables name (always on or off, trace id ratio, and their parent-based forms) decide from the parent
 * and the trace id alone.
 */
export class SamplingFirst implements IdGenerator {
  private readonly random = new RandomIdGenerator();
  /** The trace id decided on for the root span about to start. */
  private decided: string | undefined;

  constructor(readonly sampler: Sampler) {}

  /** Whether a span named `name` of `kind`, child of `parent`'s span (or a root), will be sampled. */
  sampled(parent: Context, name: string, kind: SpanKind): boolean {
    const parentSpan = trace.getSpanContext(parent);
    const root = parentSpan === undefined || !isSpanContextValid(parentSpan);
    const traceId = root ? this.random.generateTraceId() : parentSpan.traceId;
    const { decision } = this.sampler.shouldSample(parent, traceId, name, kind, NO_ATTRIBUTES, NO_LINKS);
    if (decision === SamplingDecision.NOT_RECORD) return false;
    this.decided = root ? traceId : undefined;
    return true;
  }

  generateTraceId(): string {
    const traceId = this.decided ?? this.random.generateTraceId();
    this.decided = undefined;
    return traceId;
  }

  generateSpanId(): string {
    return this.random.generateSpanId();
  }
}
