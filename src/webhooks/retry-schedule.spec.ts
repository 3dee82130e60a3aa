import { nextRetryDelayMs } from './retry-schedule';

describe('nextRetryDelayMs', () => {
  const schedule = [5_000, 300_000, 1_800_000];

  it('should follow the schedule, one step per failed attempt', () => {
    expect([1, 2, 3].map((failed) => nextRetryDelayMs(schedule, failed, () => 0.5))).toEqual(schedule);
  });

  it('should add or take away up to 20 % at random', () => {
    expect(nextRetryDelayMs(schedule, 1, () => 0)).toBe(4_000);
    expect(nextRetryDelayMs(schedule, 1, () => 1)).toBe(6_000);
    const delays = new Set(Array.from({ length: 50 }, () => nextRetryDelayMs(schedule, 2)));
    expect(delays.size).toBeGreaterThan(1);
    for (const delay of delays) expect(delay).toBeGreaterThanOrEqual(240_000);
  });

  it('should give up once the schedule is used up', () => {
    expect(nextRetryDelayMs(schedule, 4)).toBeUndefined();
    expect(nextRetryDelayMs([], 1)).toBeUndefined();
  });
});
