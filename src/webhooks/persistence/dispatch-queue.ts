import { Backlog, ClaimedDelivery, Recorded, RecordedResult } from '../deliveries';

/** The outbox's queue, as the dispatcher works it. Each method is one short transaction: none waits on the network. */
export abstract class DispatchQueue {
  /**
   * Claims up to `limit` due deliveries that nobody holds, for `leaseMs`, oldest due first, of
   * endpoints that are enabled and not paused, at most `endpointCap` in flight per endpoint across
   * every instance, or the endpoint's own cap when the policy gave it one (a throttled endpoint's
   * probe).
   */
  abstract claim(limit: number, leaseMs: number, endpointCap: number): Promise<ClaimedDelivery[]>;

  /**
   * Records results in one transaction, each only while its lease is still this claim's (a slow
   * instance never overwrites what the instance that took over recorded): the delivery, its attempt
   * row, and its endpoint's health as `endpointChange` (the policy) makes it from the row's. An
   * endpoint that answered 410 Gone, or had no success for `disableAfterMs` while failing, is
   * disabled, and its pending deliveries become failed.
   */
  abstract record(
    results: readonly RecordedResult[],
    disableAfterMs: number,
    retryScheduleMs: readonly number[],
  ): Promise<Recorded>;

  /** Deletes up to `limit` finished deliveries (with their attempts) older than `olderThanMs`, then messages left with none. */
  abstract prune(olderThanMs: number, limit: number): Promise<number>;

  /** The pending deliveries and the age of the oldest one. */
  abstract backlog(): Promise<Backlog>;

  /** Enabled endpoints in throttled state now (one probe at a time). */
  abstract throttledEndpoints(): Promise<number>;
}
