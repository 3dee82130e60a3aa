/** A delivery to write into the outbox: one event for one subscriber. */
export interface NewDelivery {
  /** The `webhook-id` header: the same on every attempt, so the receiver can deduplicate. */
  readonly webhookId: string;
  readonly url: string;
  /** The exact body to send (and sign). */
  readonly payload: string;
}

/** A delivery this instance has claimed: nobody else sends it until `leaseToken` expires. */
export interface ClaimedDelivery extends NewDelivery {
  readonly id: string;
  /** Attempts made before this one. */
  readonly attempts: number;
  /** When the event was committed (Unix ms), for the commit-to-receipt latency. */
  readonly createdAtMs: number;
  readonly leaseToken: string;
}

/** What became of one attempt, to record. */
export type AttemptResult =
  | { readonly kind: 'delivered' }
  | { readonly kind: 'retry'; readonly delayMs: number; readonly error: string }
  | { readonly kind: 'failed'; readonly error: string }
  /** Not attempted after all (shutdown came first): free the claim, count nothing. */
  | { readonly kind: 'released' };

/** The pending deliveries and the age of the oldest one. */
export interface Backlog {
  readonly pending: number;
  readonly oldestCreatedAtMs?: number;
}

/**
 * The outbox, for the dispatcher: claim due deliveries under a lease, record what became of them,
 * prune finished ones. Rows are written by `OutboxWriter`, inside the plant's transaction.
 */
export abstract class DeliveriesStore {
  /** Claims up to `limit` due deliveries that nobody holds, for `leaseMs`, oldest due first. */
  abstract claim(limit: number, leaseMs: number): Promise<ClaimedDelivery[]>;

  /**
   * Records results in one transaction, each only while its lease is still this claim's (a slow
   * instance never overwrites what the instance that took over recorded). Resolves with how many
   * were recorded.
   */
  abstract record(results: readonly { delivery: ClaimedDelivery; result: AttemptResult }[]): Promise<number>;

  /** Deletes up to `limit` delivered or failed rows finished more than `olderThanMs` ago; resolves with how many. */
  abstract prune(olderThanMs: number, limit: number): Promise<number>;

  abstract backlog(): Promise<Backlog>;
}
