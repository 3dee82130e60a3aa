/** Up to this share of a delay is added or taken away at random, so retries after an outage spread out. */
const JITTER = 0.2;

/**
 * The delay before the next attempt after `failedAttempts` failures (1 after the first), by the
 * schedule with ±20 % jitter; `undefined` when the schedule is used up and the delivery has failed.
 */
export function nextRetryDelayMs(
  schedule: readonly number[],
  failedAttempts: number,
  random: () => number = Math.random,
): number | undefined {
  const base = schedule[failedAttempts - 1];
  if (base === undefined) return undefined;
  return Math.round(base * (1 - JITTER + 2 * JITTER * random()));
}
