import { Context, ROOT_CONTEXT, SpanKind, trace, TraceFlags } from '@opentelemetry/api';
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  ParentBasedSampler,
  Sampler,
  SamplingDecision,
  SimpleSpanProcessor,
  TraceIdRatioBasedSampler,
} from '@opentelemetry/sdk-trace-base';
import { buildSamplerFromEnv } from '@opentelemetry/sdk-trace-base/build/src/config';
import { SamplingFirst } from './sampling-first';

/** A sampler that keeps the root spans whose trace id ends in an even digit, and says which ids it saw. */
class EvenTraceIds implements Sampler {
  readonly seen: string[] = [];
  shouldSample(_context: Context, traceId: string) {
    this.seen.push(traceId);
    return {
      decision:
        parseInt(traceId.slice(-1), 16) % 2 === 0 ? SamplingDecision.RECORD_AND_SAMPLED : SamplingDecision.NOT_RECORD,
    };
  }
}

function tracerWith(sampler: Sampler) {
  const sampling = new SamplingFirst(sampler);
  const exporter = new InMemorySpanExporter();
  const provider = new BasicTracerProvider({
    sampler,
    idGenerator: sampling,
    spanProcessors: [new SimpleSpanProcessor(exporter)],
  });
  return { sampling, tracer: provider.getTracer('test'), exporter };
}

describe('SamplingFirst (the decision before any span)', () => {
  it('should give the root span it decided to sample the trace id it decided on', () => {
    const sampler = new EvenTraceIds();
    const { sampling, tracer } = tracerWith(sampler);
    let kept = 0;
    for (let i = 0; i < 200; i++) {
      const asked = sampler.seen.length;
      if (!sampling.sampled(ROOT_CONTEXT, 'GET /plants/:id', SpanKind.SERVER)) continue;
      kept++;
      const decidedOn = sampler.seen[asked];
      const span = tracer.startSpan('GET /plants/:id', { kind: SpanKind.SERVER }, ROOT_CONTEXT);
      expect(span.isRecording()).toBe(true);
      expect(span.spanContext().traceId).toBe(decidedOn);
      span.end();
    }
    // Half of random ids end in an even digit: both answers were given.
    expect(kept).toBeGreaterThan(50);
    expect(kept).toBeLessThan(150);
  });

  it("should keep a sampled parent's trace, and leave no decided id behind for the next root span", () => {
    const { sampling, tracer } = tracerWith(new ParentBasedSampler({ root: new TraceIdRatioBasedSampler(0) }));
    const parent = trace.setSpanContext(ROOT_CONTEXT, {
      traceId: '0af7651916cd43dd8448eb211c80319c',
      spanId: 'b7ad6b7169203331',
      traceFlags: TraceFlags.SAMPLED,
      isRemote: true,
    });
    expect(sampling.sampled(parent, 'GET', SpanKind.SERVER)).toBe(true);
    const child = tracer.startSpan('GET', { kind: SpanKind.SERVER }, parent);
    expect(child.spanContext().traceId).toBe('0af7651916cd43dd8448eb211c80319c');
    expect(sampling.generateTraceId()).not.toBe('0af7651916cd43dd8448eb211c80319c');
    // A root under a ratio of 0, and a caller that did not sample: no.
    expect(sampling.sampled(ROOT_CONTEXT, 'GET', SpanKind.SERVER)).toBe(false);
    const unsampledParent = trace.setSpanContext(ROOT_CONTEXT, {
      traceId: '0af7651916cd43dd8448eb211c80319c',
      spanId: 'b7ad6b7169203331',
      traceFlags: TraceFlags.NONE,
      isRemote: true,
    });
    expect(sampling.sampled(unsampledParent, 'GET', SpanKind.SERVER)).toBe(false);
  });

  it('should sample the ratio OTEL_TRACES_SAMPLER_ARG asks for, with the sampler the SDK builds from the variables', () => {
    const saved = { ...process.env };
    process.env.OTEL_TRACES_SAMPLER = 'parentbased_traceidratio';
    process.env.OTEL_TRACES_SAMPLER_ARG = '0.25';
    try {
      const { sampling, tracer, exporter } = tracerWith(buildSamplerFromEnv());
      let kept = 0;
      for (let i = 0; i < 4000; i++) {
        if (!sampling.sampled(ROOT_CONTEXT, 'GET', SpanKind.SERVER)) continue;
        kept++;
        tracer.startSpan('GET', { kind: SpanKind.SERVER }, ROOT_CONTEXT).end();
      }
      // 1,000 expected; the standard deviation is ~27.
      expect(kept).toBeGreaterThan(850);
      expect(kept).toBeLessThan(1150);
      // The SDK agreed every time: each decision made a sampled span.
      expect(exporter.getFinishedSpans()).toHaveLength(kept);
    } finally {
      process.env = saved;
    }
  });
});
