import { AttemptRecord, AttemptResult, Failure } from './deliveries';
import { nextRetryDelayMs } from './retry-schedule';
import { Attempt } from './webhook.sender';

/**
 * The dispatcher's decisions, with no database and no network, so they are unit-tested alone: what
 * an answer means (API.md, "What the receiver's answer means"), what an attempt makes of its
 * delivery, and what it makes of its endpoint: its count of endpoint signals, whether it is throttled,
 * its cap on sends in flight and its pause. The stores write what these functions decide and the claim reads it;
 * neither restates the rule.
 */

/** Endpoint signals in a row (with no 2xx between) that throttle an endpoint. */
export const THROTTLE_AFTER_SIGNALS = 5;
/** Sends in flight a throttled endpoint may have: one probe. */
export const THROTTLED_CAP = 1;
/** The longest a throttled endpoint is left alone between probes (unless the schedule's first step is longer). */
export const MAX_ENDPOINT_PAUSE_MS = 60_000;

/** An endpoint's health, as its row keeps it for every instance. */
export interface EndpointHealth {
  /** Endpoint signals (429, 502, 503, 504, 3xx, no answer) since its last 2xx. */
  readonly signals: number;
  /** One probe at a time, backing off, until a 2xx. */
  readonly throttled: boolean;
  /** Pauses in a row while throttled, the current one included (see `endpointPauseMs`); 0 when not throttled. */
  readonly backoffs: number;
}

/** What the results of one record do to their endpoint's row. */
export interface EndpointChange extends EndpointHealth {
  /** Sends in flight the claim allows it: THROTTLED_CAP, or null for the configured per-endpoint cap. */
  readonly inFlightCap: number | null;
  /** Its pause: none ('clear'), as it is ('keep'), or a new one of `ms` from now. */
  readonly pause: 'clear' | 'keep' | { readonly ms: number };
  /** The last attempt failed: WEBHOOK_DISABLE_AFTER counts from the first failure in a row. */
  readonly failing: boolean;
  /** Disable it at once, with this reason (it answered 410 Gone). */
  readonly disable?: string;
}

/** What an attempt that failed says: about its event only, about its endpoint, or that the subscriber is gone. */
export function failureOf(attempt: Attempt): Failure {
  switch (attempt.outcome) {
    case 'gone':
      return { meaning: 'gone' };
    case '3xx': // the URL is wrong for every event
    case 'timeout':
    case 'network':
    case 'blocked':
      return { meaning: 'endpoint' };
  }
  const status = attempt.status ?? 0;
  const retryAfter = attempt.retryAfterMs === undefined ? {} : { retryAfterMs: attempt.retryAfterMs };
  if (status === 429) return { meaning: 'endpoint', ...retryAfter, retryAfterHoldsEndpoint: true };
  if (status === 503) return { meaning: 'endpoint', ...retryAfter };
  if (status === 502 || status === 504) return { meaning: 'endpoint' };
  return { meaning: 'event' };
}

/**
 * What becomes of a delivery after `attempt`, its `attemptsBefore + 1`-th try on its current schedule
 * (`ClaimedDelivery.attemptsOnSchedule`: a resend or recover starts the schedule again): succeeded,
 * retried on its schedule (no sooner than a Retry-After), failed (schedule used up, or 410 Gone), or
 * released (shutdown came first: nothing counts).
 */
export function attemptResult(
  attempt: Attempt,
  attemptsBefore: number,
  retryScheduleMs: readonly number[],
): AttemptResult {
  if (attempt.outcome === 'aborted') return { kind: 'released' };
  const record = attemptRecord(attempt);
  if (attempt.outcome === '2xx') return { kind: 'succeeded', attempt: record };
  const failure = failureOf(attempt);
  if (failure.meaning === 'gone') return { kind: 'failed', attempt: record, failure };
  const delayMs = nextRetryDelayMs(retryScheduleMs, attemptsBefore + 1);
  if (delayMs === undefined) return { kind: 'failed', attempt: record, failure };
  return { kind: 'retry', delayMs: Math.max(delayMs, failure.retryAfterMs ?? 0), attempt: record, failure };
}

/**
 * What `results` (one record's, of one endpoint, in order) make of an endpoint that was `before`.
 * A 2xx resets it. An endpoint signal counts; the fifth in a row throttles it. Any other failure
 * (500, 400…) is about its event: the endpoint keeps its state. While throttled, a failure pauses
 * it again, backing off once per record (the sends that were in flight when it was throttled come
 * back together: one step, not one each), and a Retry-After replaces that pause; a 429's Retry-After
 * pauses it anyway.
 */
export function endpointChange(
  before: EndpointHealth,
  results: readonly AttemptResult[],
  retryScheduleMs: readonly number[],
): EndpointChange | undefined {
  let change: EndpointChange | undefined;
  let backedOff = false;
  for (const result of results) {
    if (result.kind === 'released') continue;
    const health = change ?? before;
    const next = afterOne(health, result, backedOff, retryScheduleMs);
    if (next.backoffs > health.backoffs) backedOff = true;
    else if (next.backoffs === 0) backedOff = false; // reset by a 2xx: a later failure starts afresh
    change = {
      ...next,
      pause: next.pause === 'keep' && change ? change.pause : next.pause,
      disable: change?.disable ?? next.disable,
    };
  }
  return change;
}

const RESET = { signals: 0, throttled: false, backoffs: 0, inFlightCap: null, pause: 'clear' } as const;

function afterOne(
  before: EndpointHealth,
  result: AttemptResult,
  backedOff: boolean,
  retryScheduleMs: readonly number[],
): EndpointChange {
  if (result.kind !== 'retry' && result.kind !== 'failed') return { ...RESET, failing: false };
  const { failure } = result;
  // 410: the subscriber answered on purpose; nothing to back off from, it is disabled instead.
  if (failure.meaning === 'gone') return { ...RESET, failing: true, disable: GONE_REASON };
  const signals = before.signals + (failure.meaning === 'endpoint' ? 1 : 0);
  const throttled = before.throttled || signals >= THROTTLE_AFTER_SIGNALS;
  const backoffs = throttled && !backedOff ? before.backoffs + 1 : before.backoffs;
  const retryAfterMs = failure.meaning === 'endpoint' ? failure.retryAfterMs : undefined;
  let pause: EndpointChange['pause'] = 'keep';
  if (throttled) {
    pause = { ms: retryAfterMs ?? endpointPauseMs(backoffs, retryScheduleMs) };
  } else if (failure.meaning === 'endpoint' && failure.retryAfterHoldsEndpoint && retryAfterMs !== undefined) {
    pause = { ms: retryAfterMs };
  }
  return { signals, throttled, backoffs, inFlightCap: throttled ? THROTTLED_CAP : null, pause, failing: true };
}

/**
 * How long a throttled endpoint is left alone at its `n`-th pause in a row: the schedule's first
 * delay, doubled each time, at most MAX_ENDPOINT_PAUSE_MS. Its own deliveries keep their own
 * schedules; this only keeps a dead endpoint from being tried as often as new events come in.
 */
export function endpointPauseMs(n: number, retryScheduleMs: readonly number[]): number {
  const first = retryScheduleMs[0] ?? 1000;
  return Math.min(first * 2 ** Math.min(Math.max(n - 1, 0), 20), Math.max(first, MAX_ENDPOINT_PAUSE_MS));
}

/** What an endpoint disabled because it answered 410 Gone says about it. */
export const GONE_REASON = 'The receiver answered 410 Gone: it asked for no more deliveries';

/** What an endpoint disabled by the service after WEBHOOK_DISABLE_AFTER says about it. */
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
