/** Where a key stands after a hit on its fixed-window counter. */
export interface WindowCount {
  /** Whether the key is past its limit: more hits in its window than the limit allows. */
  readonly limited: boolean;
  /** Milliseconds until the window ends: the count starts again, or the key is no longer limited. */
  readonly resetInMs: number;
}

interface Window {
  count: number;
  endsAt: number;
}

/**
 * Fixed-window counters in this process, in bounded memory and with bounded work per hit whatever the
 * number of keys (client addresses: one IPv6 client alone has 2^64 of them). At most `capacity` keys
 * at or below their limit (`counting`) and `capacity` keys past it (`limited`), each table in the
 * order its keys entered it; a hit looks at the key's own entry and at most the oldest of each table.
 *
 * - A new key when `counting` is full takes the place of its oldest entry, ended or not: that key's
 *   count starts again. It is one of `capacity` newer keys, each with its own limit.
 * - A key past its limit moves to `limited` and stays there until its window ends; nothing removes it
 *   sooner. Its place is freed when its window has ended and it is the oldest there.
 * - When a key passes its limit while `limited` is full of windows still running, the counter cannot
 *   hold it. It then counts every key it does not hold as limited, until that key's window would have
 *   ended: so that key stays limited, and so do new keys meanwhile (fail closed). Keys it holds keep
 *   their own counts. The failed-authentication limit never refuses a valid credential, so this costs
 *   a client with a wrong token a 429 instead of a 401, and a real user nothing.
 *
 * With windows of one length (the limiters use one each), `counting` is in the order its windows end.
 * `limited` is in the order its keys passed their limit, which a key whose window started sooner may
 * have passed later: its place is then freed after the one before it, at most one window late.
 */
export class WindowCounter {
  private readonly counting = new Map<string, Window>();
  private readonly limited = new Map<string, Window>();
  /** Until when every key not held counts as limited (see above). */
  private saturatedUntil = 0;
  private visited = 0;

  constructor(
    private readonly capacity = 10_000,
    private readonly now: () => number = Date.now,
  ) {}

  /** Counts one hit of `key`, in a window of `windowMs` that its first hit starts; `limit` hits pass. */
  hit(key: string, windowMs: number, limit: number): WindowCount {
    const now = this.now();
    const limited = this.limited.get(key);
    if (limited !== undefined) {
      this.visited++;
      if (limited.endsAt > now) return { limited: true, resetInMs: limited.endsAt - now };
      this.limited.delete(key);
    }
    let window = this.counting.get(key);
    if (window !== undefined) {
      this.visited++;
      if (window.endsAt <= now) {
        this.counting.delete(key);
        window = undefined;
      }
    }
    if (window === undefined) {
      if (now < this.saturatedUntil) return { limited: true, resetInMs: this.saturatedUntil - now };
      if (this.counting.size >= this.capacity) this.counting.delete(this.oldest(this.counting)[0]);
      window = { count: 0, endsAt: now + windowMs };
      this.counting.set(key, window);
    }
    if (++window.count <= limit) return { limited: false, resetInMs: window.endsAt - now };
    this.counting.delete(key);
    if (this.limitedHasRoom(now)) this.limited.set(key, window);
    else this.saturatedUntil = Math.max(this.saturatedUntil, window.endsAt);
    return { limited: true, resetInMs: window.endsAt - now };
  }

  /** The keys held, limited or not: the memory the counter takes, at most twice its capacity. */
  get size(): number {
    return this.counting.size + this.limited.size;
  }

  /** The entries looked at by every hit so far: the counter's work, whatever the number of keys. */
  get visits(): number {
    return this.visited;
  }

  private limitedHasRoom(now: number): boolean {
    if (this.limited.size < this.capacity) return true;
    const [key, window] = this.oldest(this.limited);
    if (window.endsAt > now) return false;
    this.limited.delete(key);
    return true;
  }

  private oldest(table: Map<string, Window>): [string, Window] {
    this.visited++;
    return table.entries().next().value as [string, Window];
  }
}
