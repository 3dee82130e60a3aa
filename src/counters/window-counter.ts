/** Where a fixed-window count stands after a hit. */
export interface WindowCount {
  /** Hits in the current window, this one included. */
  readonly count: number;
  /** Milliseconds until the window ends and the count starts again. */
  readonly resetInMs: number;
}

/**
 * Fixed-window counters in this process: O(1) per hit, whatever the limit (the throttler's sliding
 * window keeps one timestamp per hit and filters them all on every hit). Windows that have ended are
 * swept once the map holds `sweepAbove` keys, so an address-spraying flood cannot grow it for long.
 */
export class WindowCounter {
  private readonly windows = new Map<string, { count: number; endsAt: number }>();

  constructor(
    private readonly sweepAbove = 10_000,
    private readonly now: () => number = Date.now,
  ) {}

  hit(key: string, windowMs: number): WindowCount {
    const now = this.now();
    let window = this.windows.get(key);
    if (window === undefined || window.endsAt <= now) {
      if (this.windows.size >= this.sweepAbove) this.sweep(now);
      window = { count: 0, endsAt: now + windowMs };
      this.windows.set(key, window);
    }
    window.count++;
    return { count: window.count, resetInMs: window.endsAt - now };
  }

  private sweep(now: number): void {
    for (const [key, window] of this.windows) if (window.endsAt <= now) this.windows.delete(key);
  }
}
