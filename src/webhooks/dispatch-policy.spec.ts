import { attemptResult, endpointCap, endpointPauseMs, MAX_ENDPOINT_PAUSE_MS } from './dispatch-policy';
import { Attempt, AttemptOutcome } from './webhook.sender';

const SCHEDULE = [5000, 300_000, 1_800_000];
const attempt = (outcome: AttemptOutcome, status?: number): Attempt => ({
  outcome,
  detail: status === undefined ? 'no answer within 15000 ms' : `HTTP ${status}`,
  ...(status === undefined ? {} : { status }),
  atMs: 1_700_000_000_000,
  durationMs: 12,
});

describe('the dispatch policy', () => {
  it('should give a healthy endpoint its cap and a failing one a single probe', () => {
    expect(endpointCap(0, 8)).toBe(8);
    expect(endpointCap(1, 8)).toBe(1);
    expect(endpointCap(40, 8)).toBe(1);
  });

  it("should back a failing endpoint off from the schedule's first delay, doubling, up to a minute", () => {
    expect([1, 2, 3, 4, 5, 6, 30].map((failures) => endpointPauseMs(failures, SCHEDULE))).toEqual([
      5000,
      10_000,
      20_000,
      40_000,
      MAX_ENDPOINT_PAUSE_MS,
      MAX_ENDPOINT_PAUSE_MS,
      MAX_ENDPOINT_PAUSE_MS,
    ]);
    // A schedule whose first step is longer than a minute is never shortened.
    expect(endpointPauseMs(3, [120_000])).toBe(120_000);
  });

  it('should succeed on a 2xx, keeping the status in the attempt log', () => {
    expect(attemptResult(attempt('2xx', 204), 0, 3, SCHEDULE)).toEqual({
      kind: 'succeeded',
      attempt: { atMs: 1_700_000_000_000, responseStatus: 204, durationMs: 12 },
    });
  });

  it('should retry on the schedule (with jitter) and pause the endpoint, then fail when the schedule is used up', () => {
    const first = attemptResult(attempt('5xx', 503), 0, 0, SCHEDULE);
    expect(first).toMatchObject({ kind: 'retry', endpointPauseMs: 5000 });
    expect((first as { delayMs: number }).delayMs).toBeGreaterThanOrEqual(4000);
    expect((first as { delayMs: number }).delayMs).toBeLessThanOrEqual(6000);
    expect(attemptResult(attempt('timeout'), 1, 2, SCHEDULE)).toMatchObject({
      kind: 'retry',
      endpointPauseMs: 20_000,
      attempt: { error: 'no answer within 15000 ms' },
    });
    expect(attemptResult(attempt('network'), 3, 0, SCHEDULE)).toMatchObject({ kind: 'failed', endpointPauseMs: 5000 });
  });

  it('should fail at once on 410 Gone without counting it against the endpoint, and release an aborted send', () => {
    const gone = attemptResult(attempt('gone', 410), 0, 0, SCHEDULE);
    expect(gone).toEqual({ kind: 'failed', attempt: expect.objectContaining({ responseStatus: 410 }) });
    expect(gone).not.toHaveProperty('endpointPauseMs');
    expect(attemptResult(attempt('aborted'), 0, 0, SCHEDULE)).toEqual({ kind: 'released' });
  });
});
