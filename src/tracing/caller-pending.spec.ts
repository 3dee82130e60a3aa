import { Context, Span, SpanContext, trace, TraceFlags } from '@opentelemetry/api';
import { performance } from 'node:perf_hooks';
import { CallerPending } from './caller-pending';

describe('CallerPending (a request whose caller sent a trace context)', () => {
  const caller: SpanContext = {
    traceId: '0af7651916cd43dd8448eb211c80319c',
    spanId: 'b7ad6b7169203331',
    traceFlags: TraceFlags.SAMPLED,
    isRemote: true,
  };
  // What the server span would be started with: under which parent, from when.
  let started: { parent: SpanContext | undefined; startTime: number }[];
  const start = (parent: Context, startTime: number): Span => {
    started.push({ parent: trace.getSpanContext(parent), startTime });
    return trace.wrapSpanContext({ ...caller, spanId: `00000000000000${started.length}0` });
  };
  beforeEach(() => (started = []));

  it('should hold no span until the caller is trusted, then its span, the caller as parent', () => {
    const pending = new CallerPending(caller, start);
    expect(trace.getSpan(pending)).toBeUndefined();
    pending.trust();
    expect(started).toEqual([{ parent: caller, startTime: expect.any(Number) as number }]);
    expect(trace.getSpan(pending)?.spanContext().spanId).toBe('0000000000000010');
    // A context derived from it keeps the span.
    const key = Symbol('derived');
    expect(trace.getSpan(pending.setValue(key, 1))?.spanContext().spanId).toBe('0000000000000010');
    expect(pending.close()?.spanContext().spanId).toBe('0000000000000010');
    expect(started).toHaveLength(1);
  });

  it("should make a stranger's span a new root as it closes, and not trust it after", () => {
    const pending = new CallerPending(caller, start);
    const span = pending.close();
    expect(started).toEqual([{ parent: undefined, startTime: expect.any(Number) as number }]);
    pending.trust();
    expect(started).toHaveLength(1);
    expect(trace.getSpan(pending)).toBeUndefined();
    expect(span).toBeDefined();
  });

  it('should start the span at the arrival, whenever it is decided', () => {
    const tick = () => {
      const now = performance.now();
      while (performance.now() === now);
    };
    const first = new CallerPending(caller, start);
    tick();
    const second = new CallerPending(caller, start);
    second.close();
    tick();
    // Decided last, but arrived first.
    first.trust();
    expect(started[1].startTime).toBeLessThan(started[0].startTime);
  });
});
