/**
 * Stops calls to a dependency that failed, and lets one background probe decide when to call it
 * again. Closed: calls go through. `trip()` (a call timed out or failed) opens it: callers skip the
 * dependency at once, and every `coolDownMs` one probe runs; the first that succeeds closes it.
 * So a hung dependency costs one timeout, not one per call, for as long as it hangs.
 */
export class CircuitBreaker {
  private open = false;
  private stopped = false;
  private timer?: NodeJS.Timeout;

  constructor(
    private readonly options: {
      coolDownMs: number;
      /** Resolves when the dependency answers again; rejects (or times out) otherwise. */
      probe: () => Promise<unknown>;
      /** Told when the breaker opens (false) and closes again (true). */
      onChange?: (closed: boolean) => void;
    },
  ) {}

  /** Whether calls may go to the dependency. */
  get closed(): boolean {
    return !this.open;
  }

  /** A call failed: skip the dependency until a probe succeeds. */
  trip(): void {
    if (this.open) return;
    this.open = true;
    this.options.onChange?.(false);
    this.scheduleProbe();
  }

  /** No more probes (shutdown), not even after one in flight fails. */
  stop(): void {
    this.stopped = true;
    clearTimeout(this.timer);
    this.timer = undefined;
  }

  private scheduleProbe(): void {
    this.timer = setTimeout(() => {
      this.options.probe().then(
        () => {
          this.timer = undefined;
          this.open = false;
          this.options.onChange?.(true);
        },
        () => {
          if (!this.stopped) this.scheduleProbe();
        },
      );
    }, this.options.coolDownMs);
    this.timer.unref();
  }
}
