import { Registry } from 'prom-client';
import { loadConfig } from '../config/load-config';
import { RateLimitStorage } from './rate-limit.storage';

// CONTRACT.md, "Authentication": counting failed authentications costs the same, in work and memory,
// at any number of addresses. Driven through `hit`, what AuthFailureLimiter calls, so that it holds
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
    expect((await hits('early-limited', 1)).last).toEqual({ limited: true, resetInMs: WINDOW_MS });
    jest.advanceTimersByTime(WINDOW_MS);
    expect((await hits('early-limited', 1)).last).toEqual({ limited: false, resetInMs: WINDOW_MS });
  });
});
