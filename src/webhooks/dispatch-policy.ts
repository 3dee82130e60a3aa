import { AttemptRecord, AttemptResult } from './persistence/deliveries.store';
import { nextRetryDelayMs } from './retry-schedule';
import { Attempt } from './webhook.sender';

/** The longest an endpoint is left alone after failures, however many (unless the schedule's first step is longer). */
export const MAX_ENDPOINT_PAUSE_MS = 60_000;

/**
 * The dispatcher's decisions, with no database and no network, so they are unit-tested alone:
 * what an attempt's outcome makes of its delivery, how long a failing endpoint backs off, and how
 * many sends one endpoint may have in flight.
 */

/**
 * How long an endpoint is left alone after its `failures`-th failure in a row: the schedule's first
 * delay, doubled each time, at most MAX_ENDPOINT_PAUSE_MS. Its own deliveries keep their own
 * schedules; this only keeps a dead endpoint from being tried as often as new events come in.
 */
export function endpointPauseMs(failures: number, retryScheduleMs: readonly number[]): number {
  const first = retryScheduleMs[0] ?? 1000;
  return Math.min(first * 2 ** Math.min(Math.max(failures - 1, 0), 20), Math.max(first, MAX_ENDPOINT_PAUSE_MS));
}

/** Sends in flight one endpoint may have: its cap while healthy, one probe while it is failing. */
export function endpointCap(failuresSinceSuccess: number, cap: number): number {
  return failuresSinceSuccess > 0 ? 1 : cap;
}

/** What becomes of a delivery after `attempt`, its `attemptsBefore + 1`-th try, to an endpoint that had failed `endpointFailures` times in a row. */
export function attemptResult(
  attempt: Attempt,
  attemptsBefore: number,
  endpointFailures: number,
  retryScheduleMs: readonly number[],
): AttemptResult {
  const endpointPause = endpointPauseMs(endpointFailures + 1, retryScheduleMs);
  const record = attemptRecord(attempt);
  switch (attempt.outcome) {
    case '2xx':
      return { kind: 'succeeded', attempt: record };
    case 'aborted':
      return { kind: 'released' };
    case 'gone':
      // 410: the subscriber asked for no more of this event. It answered: the endpoint is alive.
      return { kind: 'failed', attempt: record };
  }
  const delayMs = nextRetryDelayMs(retryScheduleMs, attemptsBefore + 1);
  return delayMs === undefined
    ? { kind: 'failed', attempt: record, endpointPauseMs: endpointPause }
    : { kind: 'retry', delayMs, attempt: record, endpointPauseMs: endpointPause };
}

/** What an endpoint disabled by the service says about it. */
export function disabledReason(disableAfterMs: number): string {
  return `No successful delivery for ${formatDuration(disableAfterMs)} while deliveries kept failing (WEBHOOK_DISABLE_AFTER)`;
}

function formatDuration(ms: number): string {
  for (const [unit, size] of [
    ['d', 86_400_000],
    ['h', 3_600_000],
    ['m', 60_000],
    ['s', 1000],
  ] as const) {
    if (ms >= size && ms % size === 0) return `${ms / size}${unit}`;
  }
  return `${ms}ms`;
}

/** An attempt as the attempt log keeps it: its status when one came, what went wrong otherwise. */
export function attemptRecord(attempt: Attempt): AttemptRecord {
  return {
    atMs: attempt.atMs,
    ...(attempt.status === undefined ? { error: attempt.detail } : { responseStatus: attempt.status }),
    durationMs: attempt.durationMs,
  };
}
