/** Where a key stands after a hit on its fixed-window counter. */
export interface WindowCount {
  /** Whether the key is past its limit: more hits in its window than the limit allows. */
  readonly limited: boolean;
  /** The hits counted in the key's window, this one included; past the limit, the limit and one. */
  readonly hits: number;
  /** Milliseconds until the window ends: the count starts again, or the key is no longer limited. */
  readonly resetInMs: number;
}

interface Window {
  readonly key: string;
  count: number;
  /** When the window ends; for a key past its limit with a block (`hit`'s `blockMs`), when that ends. */
  endsAt: number;
  /** Which table holds it, and where. */
  limited: boolean;
  slot: number;
}

/**
 * Fixed-window counters in this process, in bounded memory and with bounded work per hit whatever the
 * number of keys (client addresses: one IPv6 client alone has 2^64 of them). Two tables of `capacity`
 * places each, taken in turn like a ring: `counting` for keys at or below their limit, `limited` for
 * keys past it. A hit looks at its key's entry and at most the next place of each table.
 *
 * - A new key takes the next place of `counting`: a key held there loses its count (it starts again),
 *   after `capacity` newer keys, each with its own limit.
 * - A key past its limit takes the next place of `limited`, and holds it until its window (or its
 *   block) ends: nothing removes it sooner.
 * - If that place holds a window still running, `capacity` keys passed their limit since it did,
 *   within one window. The counter then cannot hold the new one, and counts every key it does not hold
 *   as limited until that key's window would have ended: that key stays limited, and so do new keys
 *   meanwhile (fail closed). Keys it holds keep their own counts. The failed-authentication limit
 *   never refuses a valid credential, so this costs a client with a wrong token a 429 instead of a
 *   401, and a real user nothing. The per-principal rate limit counts verified principals: there,
 *   `capacity` principals past their limit within one block would make new principals limited too.
 *
 * The places are arrays, not a Map's order: a Map whose oldest entries are deleted keeps their slots
 * until it rehashes, and finding its first live entry means skipping them all.
 */
export class WindowCounter {
  private readonly windows = new Map<string, Window>();
  private readonly counting: (Window | undefined)[];
  private readonly limited: (Window | undefined)[];
  private nextCounting = 0;
  private nextLimited = 0;
  /** Until when every key not held counts as limited (see above). */
  private saturatedUntil = 0;
  private visited = 0;

  constructor(
    private readonly capacity = 10_000,
    private readonly now: () => number = Date.now,
  ) {
    this.counting = new Array<Window | undefined>(capacity).fill(undefined);
    this.limited = new Array<Window | undefined>(capacity).fill(undefined);
  }

  /**
   * Counts one hit of `key`, in a window of `windowMs` that its first hit starts; `limit` hits pass.
   * A key past its limit stays limited until its window ends, or, given `blockMs`, for that long from
   * the hit that passed the limit (then a new window starts). One counter takes one `blockMs` (or
   * none) for all its keys: its limited table then fills in the order its places free up.
   */
  hit(key: string, windowMs: number, limit: number, blockMs?: number): WindowCount {
    const now = this.now();
    let window = this.windows.get(key);
    if (window !== undefined) {
      this.visited++;
      if (window.endsAt <= now) {
        this.forget(window);
        window = undefined;
      } else if (window.limited) {
        return { limited: true, hits: window.count, resetInMs: window.endsAt - now };
      }
    }
    if (window === undefined) {
      if (now < this.saturatedUntil) return { limited: true, hits: limit + 1, resetInMs: this.saturatedUntil - now };
      window = this.take(key, now + windowMs);
    }
    if (++window.count <= limit) return { limited: false, hits: window.count, resetInMs: window.endsAt - now };
    if (blockMs !== undefined) window.endsAt = now + blockMs;
    this.counting[window.slot] = undefined;
    if (!this.promote(window, now)) {
      this.windows.delete(key);
      this.saturatedUntil = Math.max(this.saturatedUntil, window.endsAt);
    }
    return { limited: true, hits: window.count, resetInMs: window.endsAt - now };
  }

  /** The keys held, limited or not: the memory the counter takes, at most twice its capacity. */
  get size(): number {
    return this.windows.size;
  }

  /** The entries looked at by every hit so far: the counter's work, whatever the number of keys. */
  get visits(): number {
    return this.visited;
  }

  /** The next place of `counting` for a new key; a key held there loses its count. */
  private take(key: string, endsAt: number): Window {
    const slot = this.nextCounting;
    this.nextCounting = (slot + 1) % this.capacity;
    const previous = this.counting[slot];
    if (previous !== undefined) {
      this.visited++;
      this.windows.delete(previous.key);
    }
    const window: Window = { key, count: 0, endsAt, limited: false, slot };
    this.counting[slot] = window;
    this.windows.set(key, window);
    return window;
  }

  /** Moves a key past its limit to the next place of `limited`, unless a window still runs there. */
  private promote(window: Window, now: number): boolean {
    const slot = this.nextLimited;
    const previous = this.limited[slot];
    if (previous !== undefined) {
      this.visited++;
      if (previous.endsAt > now) return false;
      this.windows.delete(previous.key);
    }
    window.limited = true;
    window.slot = slot;
    this.limited[slot] = window;
    this.nextLimited = (slot + 1) % this.capacity;
    return true;
  }

  private forget(window: Window): void {
    (window.limited ? this.limited : this.counting)[window.slot] = undefined;
    this.windows.delete(window.key);
  }
}
