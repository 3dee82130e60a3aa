import {
  attemptResult,
  endpointChange,
  EndpointHealth,
  endpointPauseMs,
  failureOf,
  GONE_REASON,
  MAX_ENDPOINT_PAUSE_MS,
  THROTTLE_AFTER_SIGNALS,
} from './dispatch-policy';
import { AttemptResult } from './deliveries';
import { Attempt, AttemptOutcome } from './webhook.sender';

const SCHEDULE = [5000, 300_000, 1_800_000];
const attempt = (outcome: AttemptOutcome, status?: number, retryAfterMs?: number): Attempt => ({
  outcome,
  detail: status === undefined ? 'no answer within 15000 ms' : `HTTP ${status}`,
  ...(status === undefined ? {} : { status }),
  atMs: 1_700_000_000_000,
  durationMs: 12,
  ...(retryAfterMs === undefined ? {} : { retryAfterMs }),
});
const outcomeOf = (status: number): AttemptOutcome =>
  status === 410 ? 'gone' : status < 300 ? '2xx' : status < 400 ? '3xx' : status < 500 ? '4xx' : '5xx';
const answer = (status: number, retryAfterMs?: number) => attempt(outcomeOf(status), status, retryAfterMs);
/** The result of a first attempt that got `status` (or no answer). */
const result = (a: Attempt): AttemptResult => attemptResult(a, 0, SCHEDULE);
const healthy: EndpointHealth = { signals: 0, throttled: false, backoffs: 0 };
const fold = (before: EndpointHealth, ...attempts: Attempt[]) => endpointChange(before, attempts.map(result), SCHEDULE);

describe('the dispatch policy', () => {
  describe('what an answer means', () => {
    it('should take 429, 502, 503, 504, any 3xx and every failure without an answer as about the endpoint', () => {
      for (const status of [301, 302, 307, 308, 429, 502, 503, 504]) {
        expect(failureOf(answer(status))).toMatchObject({ meaning: 'endpoint' });
      }
      for (const outcome of ['timeout', 'network', 'blocked'] as const) {
        expect(failureOf(attempt(outcome))).toEqual({ meaning: 'endpoint' });
      }
    });

    it('should take any other non-2xx as about its event only, and 410 as gone', () => {
      for (const status of [400, 401, 403, 404, 409, 413, 422, 500, 501, 505, 599]) {
        expect(failureOf(answer(status))).toEqual({ meaning: 'event' });
      }
      expect(failureOf(answer(410))).toEqual({ meaning: 'gone' });
    });

    it("should keep a 429's Retry-After for the whole endpoint and a 503's for its delivery", () => {
      expect(failureOf(answer(429, 30_000))).toEqual({
        meaning: 'endpoint',
        retryAfterMs: 30_000,
        retryAfterHoldsEndpoint: true,
      });
      expect(failureOf(answer(503, 30_000))).toEqual({ meaning: 'endpoint', retryAfterMs: 30_000 });
    });
  });

  describe('what an attempt makes of its delivery', () => {
    it('should succeed on a 2xx, keeping the status in the attempt log', () => {
      expect(result(answer(204))).toEqual({
        kind: 'succeeded',
        attempt: { atMs: 1_700_000_000_000, responseStatus: 204, durationMs: 12 },
      });
    });

    it('should retry any failure on the schedule (with jitter), then fail when the schedule is used up', () => {
      const first = result(answer(500));
      expect(first).toMatchObject({ kind: 'retry', failure: { meaning: 'event' } });
      expect((first as { delayMs: number }).delayMs).toBeGreaterThanOrEqual(4000);
      expect((first as { delayMs: number }).delayMs).toBeLessThanOrEqual(6000);
      expect(attemptResult(attempt('timeout'), 1, SCHEDULE)).toMatchObject({
        kind: 'retry',
        attempt: { error: 'no answer within 15000 ms' },
        failure: { meaning: 'endpoint' },
      });
      expect(attemptResult(attempt('network'), 3, SCHEDULE)).toMatchObject({ kind: 'failed' });
    });

    it('should retry no sooner than a Retry-After, and no later than the schedule says when it is shorter', () => {
      expect(result(answer(429, 60_000))).toMatchObject({ kind: 'retry', delayMs: 60_000 });
      expect(result(answer(503, 60_000))).toMatchObject({ kind: 'retry', delayMs: 60_000 });
      const soon = result(answer(503, 1000)) as { delayMs: number };
      expect(soon.delayMs).toBeGreaterThanOrEqual(4000);
      // The attempt counts: a used-up schedule fails even with a Retry-After.
      expect(attemptResult(answer(429, 1000), 3, SCHEDULE)).toMatchObject({ kind: 'failed' });
    });

    it('should fail at once on 410 Gone, and release an aborted send', () => {
      expect(result(answer(410))).toEqual({
        kind: 'failed',
        attempt: expect.objectContaining({ responseStatus: 410 }),
        failure: { meaning: 'gone' },
      });
      expect(result(attempt('aborted'))).toEqual({ kind: 'released' });
    });
  });

  describe('what results make of their endpoint', () => {
    const throttled = (signals: number, backoffs: number) => ({ signals, throttled: true, backoffs });

    it('should leave the endpoint at full speed, unpaused, when an event fails (500, 400, …)', () => {
      expect(fold(healthy, answer(500), answer(400), answer(500))).toEqual({
        signals: 0,
        throttled: false,
        backoffs: 0,
        inFlightCap: null,
        pause: 'keep',
        failing: true,
      });
    });

    it('should count endpoint signals and stay at full speed below five, with no pause', () => {
      expect(fold(healthy, answer(502), attempt('timeout'), answer(500), answer(301))).toEqual({
        signals: 3,
        throttled: false,
        backoffs: 0,
        inFlightCap: null,
        pause: 'keep',
        failing: true,
      });
    });

    it('should throttle at the fifth signal in a row: one probe, paused for the first retry delay', () => {
      const four = { signals: THROTTLE_AFTER_SIGNALS - 1, throttled: false, backoffs: 0 };
      expect(fold(four, attempt('network'))).toEqual({
        signals: 5,
        throttled: true,
        backoffs: 1,
        inFlightCap: 1,
        pause: { ms: 5000 },
        failing: true,
      });
      // Five signals in one record do it as well, and back off one step, not one per result.
      expect(fold(healthy, ...Array.from({ length: 8 }, () => answer(504)))).toMatchObject({
        signals: 8,
        throttled: true,
        backoffs: 1,
        inFlightCap: 1,
        pause: { ms: 5000 },
      });
    });

    it('should back a throttled endpoint off, doubling to a minute, for any failure of its probe', () => {
      expect(fold(throttled(5, 1), answer(503))).toMatchObject({ signals: 6, backoffs: 2, pause: { ms: 10_000 } });
      expect(fold(throttled(7, 3), attempt('timeout'))).toMatchObject({ backoffs: 4, pause: { ms: 40_000 } });
      expect(fold(throttled(30, 25), attempt('timeout'))).toMatchObject({ pause: { ms: MAX_ENDPOINT_PAUSE_MS } });
      // A 500 is about its event: the count stays, but the probe failed, so it waits longer again.
      expect(fold(throttled(6, 2), answer(500))).toMatchObject({
        signals: 6,
        throttled: true,
        backoffs: 3,
        pause: { ms: 20_000 },
      });
    });

    it("should let a Retry-After replace a throttled endpoint's own pause, on a 429 or a 503", () => {
      expect(fold(throttled(9, 4), answer(503, 2000))).toMatchObject({ pause: { ms: 2000 } });
      expect(fold(throttled(9, 4), answer(429, 120_000))).toMatchObject({ pause: { ms: 120_000 } });
    });

    it("should pause a healthy endpoint for a 429's Retry-After, but not for a 503's", () => {
      expect(fold(healthy, answer(429, 30_000))).toMatchObject({ signals: 1, throttled: false, pause: { ms: 30_000 } });
      expect(fold(healthy, answer(429))).toMatchObject({ signals: 1, pause: 'keep' });
      expect(fold(healthy, answer(503, 30_000))).toMatchObject({ signals: 1, pause: 'keep' });
      // A later event failure in the same record does not lift it.
      expect(fold(healthy, answer(429, 30_000), answer(500))).toMatchObject({ pause: { ms: 30_000 } });
    });

    it('should reset the count, leave throttled state and lift the pause on a 2xx only', () => {
      expect(fold(throttled(12, 5), answer(200))).toEqual({
        signals: 0,
        throttled: false,
        backoffs: 0,
        inFlightCap: null,
        pause: 'clear',
        failing: false,
      });
      expect(fold({ signals: 4, throttled: false, backoffs: 0 }, answer(200), attempt('timeout'))).toMatchObject({
        signals: 1,
      });
    });

    it('should disable the endpoint on 410 Gone, and change nothing for a released send', () => {
      expect(fold({ signals: 2, throttled: false, backoffs: 0 }, answer(410))).toMatchObject({ disable: GONE_REASON });
      expect(endpointChange(healthy, [{ kind: 'released' }], SCHEDULE)).toBeUndefined();
    });
  });

  it("should back off from the schedule's first delay, doubling, up to a minute", () => {
    expect([1, 2, 3, 4, 5, 6, 30].map((n) => endpointPauseMs(n, SCHEDULE))).toEqual([
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
});
