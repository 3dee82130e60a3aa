import { Registry } from 'prom-client';
import { loadConfig } from '../config/load-config';
import { RateLimitStorage } from './rate-limit.storage';

// Counting failed authentications costs the same, in work and memory, at any number of addresses, so a
// flood from many addresses cannot slow or grow the service. Driven through `hit`, what AuthFailureLimiter calls, so that it holds
// whatever counts behind it.
describe('RateLimitStorage without Redis: the failed-authentication counts', () => {
  const WINDOW_MS = 60_000;
  const LIMIT = 3;
  let registry: Registry;
  let storage: RateLimitStorage;
  beforeEach(() => {
    // One instant for the whole flood: every window is still running, so nothing is freed by time.
    jest.useFakeTimers({ now: 1_000_000, doNotFake: ['nextTick', 'queueMicrotask', 'setImmediate'] });
    registry = new Registry();
    storage = new RateLimitStorage(loadConfig({}), registry);
  });
  afterEach(() => {
    storage.onApplicationShutdown();
    jest.useRealTimers();
  });

  /** Hits `key` `times` times; the most entries one hit looked at, and the last answer. */
  async function hits(key: string, times: number) {
    let mostVisits = 0;
    let last = { limited: false, resetInMs: 0 };
    for (let time = 0; time < times; time++) {
      const before = storage.inProcessWindows.visits;
      last = await storage.hit(key, WINDOW_MS, LIMIT);
      mostVisits = Math.max(mostVisits, storage.inProcessWindows.visits - before);
    }
    return { mostVisits, last };
  }

  it('should look at no more entries a hit, nor hold more keys, with 100,000 addresses than with 10', async () => {
    const early = await hits('early-limited', LIMIT + 1);
    expect(early.last.limited).toBe(true);
    let mostVisits = early.mostVisits;
    const heldAfter: number[] = [];
    // Once each, then past the limit each: 100,000 addresses, five times the counter's 20,000 places.
    for (let address = 0; address < 100_000; address++) {
      const { mostVisits: visits } = await hits(`once-${address}`, 1);
      mostVisits = Math.max(mostVisits, visits);
      if (address === 9 || address === 99_999) heldAfter.push(storage.inProcessWindows.size);
    }
    for (let address = 0; address < 100_000; address++) {
      const { mostVisits: visits, last } = await hits(`past-${address}`, address < 20_000 ? LIMIT + 1 : 1);
      mostVisits = Math.max(mostVisits, visits);
      // Past the limited table's 10,000 places, every address it cannot hold counts as limited.
      if (address >= 20_000) expect(last.limited).toBe(true);
    }
    heldAfter.push(storage.inProcessWindows.size);

    expect(mostVisits).toBeLessThanOrEqual(3);
    // 10,000 counting; then 10,000 limited, the places of the counting they took all left behind.
    expect(heldAfter).toEqual([11, 10_001, 10_000]);
    expect(await registry.getSingleMetricAsString('plant_store_auth_failure_keys_held')).toMatch(
      /^plant_store_auth_failure_keys_held 10000$/m,
    );
    // The address limited before the flood stays limited until its window ends.
    expect((await hits('early-limited', 1)).last).toEqual({ limited: true, hits: LIMIT + 1, resetInMs: WINDOW_MS });
    jest.advanceTimersByTime(WINDOW_MS);
    expect((await hits('early-limited', 1)).last).toEqual({ limited: false, hits: 1, resetInMs: WINDOW_MS });
  });
});

// The rate limit's budgets without Redis count as the Redis script does (`redis-throttler-storage.ts`):
// a window the first hit starts, then a block of `blockDuration` from the hit past the limit.
describe('RateLimitStorage without Redis: the rate limit', () => {
  const MINUTE = 60_000;
  let storage: RateLimitStorage;
  beforeEach(() => {
    jest.useFakeTimers({ now: 1_000_000, doNotFake: ['nextTick', 'queueMicrotask', 'setImmediate'] });
    storage = new RateLimitStorage(loadConfig({}), new Registry());
  });
  afterEach(() => {
    storage.onApplicationShutdown();
    jest.useRealTimers();
  });
  const hit = (key = 'token:a', limit = 2) => storage.increment(key, MINUTE, limit, MINUTE, 'default');

  it('should count hits in the window, block past the limit for blockDuration, then start a new window', async () => {
    expect(await hit()).toEqual({ totalHits: 1, timeToExpire: 60, isBlocked: false, timeToBlockExpire: 0 });
    jest.advanceTimersByTime(30_000);
    expect(await hit()).toEqual({ totalHits: 2, timeToExpire: 30, isBlocked: false, timeToBlockExpire: 0 });
    expect(await hit('token:b')).toEqual({ totalHits: 1, timeToExpire: 60, isBlocked: false, timeToBlockExpire: 0 });
    expect(await hit()).toMatchObject({ totalHits: 3, isBlocked: true, timeToBlockExpire: 60 });
    // Past the window's end, the block still runs: a minute from the hit that passed the limit.
    jest.advanceTimersByTime(59_000);
    expect(await hit()).toMatchObject({ isBlocked: true, timeToBlockExpire: 1 });
    jest.advanceTimersByTime(1000);
    expect(await hit()).toEqual({ totalHits: 1, timeToExpire: 60, isBlocked: false, timeToBlockExpire: 0 });
  });

  it('should keep each throttler and key apart, and apart from the failed authentications', async () => {
    await hit('token:a', 0);
    expect((await storage.increment('token:a', MINUTE, 0, MINUTE, 'other')).totalHits).toBe(1);
    expect((await storage.hit('token:a', MINUTE, 0)).hits).toBe(1);
    expect(storage.inProcessWindows.size).toBe(1);
  });

  it('should look at as many entries a hit at its 100,000th hit in a minute as at its first, and hold one', async () => {
    const visitsOf = async (count: number) => {
      const before = storage.inProcessBudgets.visits;
      for (let index = 0; index < count; index++) await hit('token:busy', 1_000_000);
      return storage.inProcessBudgets.visits - before;
    };
    const first = await visitsOf(1000);
    await visitsOf(98_000);
    const last = await visitsOf(1000);
    expect((await hit('token:busy', 1_000_000)).totalHits).toBe(100_001);
    // One entry a hit (the key's own; its first hit made it), where the throttler's own storage kept
    // every hit of the window and filtered them all on each.
    expect(first).toBe(999);
    expect(last).toBe(1000);
    expect(storage.inProcessBudgets.size).toBe(1);
  });
});
