import { context, propagation, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { CompositePropagator, W3CBaggagePropagator, W3CTraceContextPropagator } from '@opentelemetry/core';
import { contextFromCarrier } from './trace-context';

describe('contextFromCarrier (the trace context the outbox stored with an event)', () => {
  // With W3C trace context and baggage (what the 2.x SDK registered by default), the widest a process could have.
  beforeAll(() => {
    context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
    propagation.setGlobalPropagator(
      new CompositePropagator({ propagators: [new W3CTraceContextPropagator(), new W3CBaggagePropagator()] }),
    );
  });
  afterAll(() => {
    context.disable();
    propagation.disable();
  });

  const traceparent = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';

  it("should take the traceparent alone, not a caller's tracestate or baggage from an older row", () => {
    const restored = contextFromCarrier(JSON.stringify({ traceparent, tracestate: 'evil=x', baggage: 'k=v' }));
    expect(trace.getSpanContext(restored)).toEqual({
      traceId: '0af7651916cd43dd8448eb211c80319c',
      spanId: 'b7ad6b7169203331',
      traceFlags: 1,
      isRemote: true,
    });
    expect(propagation.getBaggage(restored)).toBeUndefined();
    const sent: Record<string, string> = {};
    propagation.inject(restored, sent);
    expect(sent).toEqual({ traceparent });
  });

  it('should give the root context for no carrier, or one that is not JSON or has no traceparent', () => {
    for (const carrier of [undefined, null, 'not json', 'null', '{"tracestate":"evil=x"}']) {
      expect(trace.getSpanContext(contextFromCarrier(carrier))).toBeUndefined();
    }
  });
});
