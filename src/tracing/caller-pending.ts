import { Context, ROOT_CONTEXT, Span, SpanContext, trace } from '@opentelemetry/api';
import { performance } from 'node:perf_hooks';

/** Starts the request's server span under `parent` at `startTime`, if the sampler says so. */
export type StartServerSpan = (parent: Context, startTime: number) => Span | undefined;

/**
 * The context of a request that came with its caller's trace context (`request-spans.ts`), while the
 * caller is a stranger: no span, so nothing is traced nor logged under the caller's trace id. When
 * `BearerAuthGuard` says the credential passed (`trust`), the caller's trace is continued: the server
 * span, the caller's child, sampled as the caller asked (parent-based), started back at the request's
 * arrival. A request never trusted (a 401, a 403, a 429 before authentication, an unknown route) is
 * decided as it closes, as a new root, by the service's own ratio.
 *
 * A context whose span comes later, not a context bound later: Nest runs the guard and then the
 * route's handler within the one context bound before the guard (`request-spans.ts`), and
 * AsyncLocalStorage holds that object throughout. Every value is read from what is decided so far.
 */
export class CallerPending implements Context {
  private decided: Context = ROOT_CONTEXT;
  private span: Span | undefined;
  private settled = false;
  private readonly arrival = performance.now();

  /**
   * `caller` is the caller's span context with only what `traceparent` says: its `tracestate` (and
   * baggage) stays behind, so that a receiver of the service's requests never gets it.
   */
  constructor(
    private readonly caller: SpanContext,
    private readonly start: StartServerSpan,
  ) {}

  /** The credential passed: the caller's trace is continued from here on. */
  trust(): void {
    if (this.settled) return;
    this.settled = true;
    const parent = trace.setSpanContext(ROOT_CONTEXT, this.caller);
    this.span = this.start(parent, this.arrival);
    if (this.span !== undefined) this.decided = trace.setSpan(parent, this.span);
  }

  /** The response closed: the server span to end, if sampled (a stranger's is made now, as a root). */
  close(): Span | undefined {
    if (!this.settled) this.span = this.start(ROOT_CONTEXT, this.arrival);
    this.settled = true;
    return this.span;
  }

  getValue(key: symbol): unknown {
    return this.decided.getValue(key);
  }

  setValue(key: symbol, value: unknown): Context {
    return this.decided.setValue(key, value);
  }

  deleteValue(key: symbol): Context {
    return this.decided.deleteValue(key);
  }
}
