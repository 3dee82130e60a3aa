import { Context, ROOT_CONTEXT, SpanKind, trace, TraceFlags } from '@opentelemetry/api';
import { suppressTracing } from '@opentelemetry/core';
import {
  InMemorySpanExporter,
  ParentBasedSampler,
  Sampler,
  SamplingDecision,
  SimpleSpanProcessor,
  TraceIdRatioBasedSampler,
  TracerProvider,
} from '@opentelemetry/sdk-trace';
import { samplerFromEnv } from './sampler-from-env';
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
  const provider = new TracerProvider({
    sampler,
    idGenerator: sampling,
    spanProcessors: [new SimpleSpanProcessor({ exporter })],
  });
  return { sampling, tracer: provider.getTracer('test'), exporter };
}

describe('SamplingFirst (the decision before any span)', () => {
  it('should give the root span it decided to sample the trace id it decided on, and leave it to no other span', () => {
    const sampler = new EvenTraceIds();
    const { sampling, tracer } = tracerWith(sampler);
    let kept = 0;
    for (let i = 0; i < 200; i++) {
      const asked = sampler.seen.length;
      const span = sampling.startSpan(tracer, 'GET /plants/:id', SpanKind.SERVER, ROOT_CONTEXT);
      // Asked once when it says no; once more, by the SDK, when it says yes.
      expect(sampler.seen.length - asked).toBe(span === undefined ? 1 : 2);
      if (span === undefined) continue;
      kept++;
      expect(span.isRecording()).toBe(true);
      expect(span.spanContext().traceId).toBe(sampler.seen[asked]);
      expect(sampler.seen[asked + 1]).toBe(sampler.seen[asked]);
      expect(sampling.generateTraceId()).not.toBe(sampler.seen[asked]);
      span.end();
    }
    // Half of random ids end in an even digit: both answers were given.
    expect(kept).toBeGreaterThan(50);
    expect(kept).toBeLessThan(150);
  });

  it("should keep a sampled parent's trace, and make no span under a caller that did not sample or with tracing suppressed", () => {
    const { sampling, tracer, exporter } = tracerWith(
      new ParentBasedSampler({ root: new TraceIdRatioBasedSampler(0) }),
    );
    const parent = (flags: TraceFlags) =>
      trace.setSpanContext(ROOT_CONTEXT, {
        traceId: '0af7651916cd43dd8448eb211c80319c',
        spanId: 'b7ad6b7169203331',
        traceFlags: flags,
        isRemote: true,
      });
    const child = sampling.startSpan(tracer, 'GET', SpanKind.SERVER, parent(TraceFlags.SAMPLED));
    expect(child?.spanContext().traceId).toBe('0af7651916cd43dd8448eb211c80319c');
    expect(child?.spanContext().spanId).not.toBe('b7ad6b7169203331');
    child?.end();
    expect(sampling.startSpan(tracer, 'GET', SpanKind.SERVER, parent(TraceFlags.NONE))).toBeUndefined();
    // A root under a ratio of 0.
    expect(sampling.startSpan(tracer, 'GET', SpanKind.SERVER, ROOT_CONTEXT)).toBeUndefined();
    expect(
      sampling.startSpan(tracer, 'GET', SpanKind.SERVER, suppressTracing(parent(TraceFlags.SAMPLED))),
    ).toBeUndefined();
    expect(exporter.getFinishedSpans()).toHaveLength(1);
  });

  it('should sample the ratio OTEL_TRACES_SAMPLER_ARG asks for, with the sampler built from the variables', () => {
    const { sampling, tracer, exporter } = tracerWith(
      samplerFromEnv({ OTEL_TRACES_SAMPLER: 'parentbased_traceidratio', OTEL_TRACES_SAMPLER_ARG: '0.25' }),
    );
    let kept = 0;
    for (let i = 0; i < 4000; i++) {
      const span = sampling.startSpan(tracer, 'GET', SpanKind.SERVER, ROOT_CONTEXT);
      if (span === undefined) continue;
      kept++;
      span.end();
    }
    // 1,000 expected; the standard deviation is ~27.
    expect(kept).toBeGreaterThan(850);
    expect(kept).toBeLessThan(1150);
    // The SDK agreed every time: each decision made a sampled span, and it asked the same sampler.
    expect(exporter.getFinishedSpans()).toHaveLength(kept);
  });
});
