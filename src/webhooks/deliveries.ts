import { SigningSecret } from './endpoints/endpoint';

/*
 * What the webhook delivery ports (`OutboxStore`, `DispatchQueue`, `DeliveryLog`) take and give.
 */

/** An event to write into the outbox: one message, delivered to every endpoint enabled at commit. */
export interface NewMessage {
  /** The `webhook-id` header: one per event, the same for every endpoint and on every attempt. */
  readonly id: string;
  readonly eventType: string;
  /** The event's data, JSON text, ids exact: the whole body of a bare message (see `webhookBody`). */
  readonly data: string;
  /** Sent in the Standard Webhooks envelope: every event type but `plant.created`. */
  readonly enveloped: boolean;
  /** The `traceparent` of the request that committed it (JSON: `{"traceparent": …}`), when traced. */
  readonly traceContext?: string;
}

/** A delivery this instance has claimed: nobody else sends it until `leaseToken` expires. */
export interface ClaimedDelivery {
  /** The row's own id (the store's; not shown to clients). */
  readonly id: string;
  /** The message's id: the `webhook-id` header. */
  readonly webhookId: string;
  readonly endpointId: string;
  /** The endpoint's URL now (a changed URL applies to pending deliveries). */
  readonly url: string;
  /** The endpoint's secrets, current first; expired ones are filtered out by whoever signs. */
  readonly secrets: readonly SigningSecret[];
  /** The body exactly as sent and signed (`webhookBody`). */
  readonly payload: string;
  /** Attempts made before this one. */
  readonly attempts: number;
  /**
   * Of those, the ones on its current retry schedule: since it was created, or since a resend or a
   * recover last gave it the schedule afresh. The next delay is the schedule's step for this count.
   */
  readonly attemptsOnSchedule: number;
  /** When the event was committed (Unix ms), for the commit-to-receipt latency. */
  readonly createdAtMs: number;
  readonly leaseToken: string;
  /**
   * Its `next_attempt_at` as claimed, in the store's own terms (opaque to everyone else): the record
   * compares it, and keeps a delivery pending on the schedule a resend gave it while it was out.
   */
  readonly dueAt: string;
  /** The committing request's trace context, when it was traced: the delivery's span joins that trace. */
  readonly traceContext?: string;
}

/** One try, as the attempt log shows it. */
export interface AttemptRecord {
  /** When it started (Unix ms). */
  readonly atMs: number;
  /** The response's status, when one came. */
  readonly responseStatus?: number;
  /** What went wrong on the way (timeout, refused connection, blocked address…), when no status came or it was not a 2xx. */
  readonly error?: string;
  readonly durationMs: number;
}

/** What a failed attempt says beyond its delivery (API.md, "What the receiver's answer means"). */
export interface Failure {
  /** About this event only (500, 400…), about the endpoint (429, 502, 503, 504, 3xx, no answer), or 410 Gone. */
  readonly meaning: 'event' | 'endpoint' | 'gone';
  /** The receiver's Retry-After (on a 429 or 503), in ms from the attempt. */
  readonly retryAfterMs?: number;
  /** A 429: its Retry-After holds every delivery of the endpoint, not only this one. */
  readonly retryAfterHoldsEndpoint?: boolean;
}

/** What became of one attempt, to record. */
export type AttemptResult =
  | { readonly kind: 'succeeded'; readonly attempt: AttemptRecord }
  | { readonly kind: 'retry'; readonly delayMs: number; readonly attempt: AttemptRecord; readonly failure: Failure }
  | { readonly kind: 'failed'; readonly attempt: AttemptRecord; readonly failure: Failure }
  /** Not attempted after all (shutdown came first): free the claim, count nothing. */
  | { readonly kind: 'released' };

export interface RecordedResult {
  readonly delivery: ClaimedDelivery;
  readonly result: AttemptResult;
}

export interface EndpointRef {
  readonly id: string;
  readonly url: string;
}

/** What `record` did. */
export interface Recorded {
  /** Results recorded (a result whose lease had run out is not). */
  readonly recorded: number;
  /** Endpoints this record disabled: they answered 410 Gone, or had failed for `disableAfterMs` with no success. */
  readonly disabled: readonly (EndpointRef & { readonly why: 'gone' | 'failing' })[];
  /** Endpoints this record throttled (one probe at a time), and those it brought back to full speed. */
  readonly throttled: readonly EndpointRef[];
  readonly recovered: readonly EndpointRef[];
}

/** The pending deliveries and the age of the oldest one. */
export interface Backlog {
  readonly pending: number;
  readonly oldestCreatedAtMs?: number;
}

export type DeliveryStatus = 'pending' | 'succeeded' | 'failed';

/** A delivery as the admin API shows it. */
export interface DeliveryView {
  /** The store's row id: the cursor of the delivery log's pages. */
  readonly seq: string;
  /** The `webhook-id`. */
  readonly id: string;
  readonly endpointId: string;
  readonly eventType: string;
  /** The body exactly as sent (`webhookBody`). */
  readonly payload: string;
  readonly status: DeliveryStatus;
  readonly attempts: number;
  readonly createdAtMs: number;
  readonly nextAttemptAtMs?: number;
  readonly lastAttempt?: AttemptRecord;
}

/** The deliveries a recover brings back: its endpoint's failed ones created in [sinceMs, untilMs). */
export interface RecoverRange {
  readonly sinceMs: number;
  readonly untilMs?: number;
}

/**
 * Where a recover stands between two batches, in the store's own terms (opaque to everyone else):
 * when it began, and the last delivery it looked at, in the order it walks them (creation time, then
 * row id).
 */
export interface RecoverCursor {
  /**
   * Its start on the store's clock. A delivery that failed after it was brought back meanwhile by
   * another recover (or a resend) and failed again: this recover leaves it, so two recovers at once
   * bring each delivery back once between them.
   */
  readonly startedAt: string;
  readonly createdAt: string;
  readonly seq: string;
}

/** What one batch of a recover did. */
export interface RecoveredBatch {
  /** Failed deliveries it made pending. */
  readonly queued: number;
  /** Where the next batch starts; absent when none is left. */
  readonly next?: RecoverCursor;
}

export interface DeliveryPageQuery {
  readonly status?: DeliveryStatus;
  readonly limit: number;
  /** The `seq` of the last delivery of the previous page: this page is older. */
  readonly after?: string;
}
