import { performance } from 'node:perf_hooks';

/**
 * Calls `load` at most once per `ttlMs`: callers meanwhile share the call in flight, then its
 * outcome (a failure too) until `ttlMs` after it settled. For what public routes read from the
 * database (readiness, the metrics scrape): a flood of probes costs one query per `ttlMs`.
 */
export class SharedResult<T> {
  private inFlight?: Promise<T>;
  private settled?: { at: number; value: Promise<T> };

  constructor(
    private readonly load: () => Promise<T>,
    private readonly ttlMs: number,
    private readonly now: () => number = () => performance.now(),
  ) {}

  get(): Promise<T> {
    if (this.inFlight !== undefined) return this.inFlight;
    if (this.settled !== undefined && this.now() - this.settled.at < this.ttlMs) return this.settled.value;
    const value = this.load();
    this.inFlight = value;
    const settle = () => {
      this.inFlight = undefined;
      this.settled = { at: this.now(), value };
    };
    value.then(settle, settle);
    return value;
  }
}
