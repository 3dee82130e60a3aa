import { setMaxListeners } from 'node:events';
import { Logger, OnApplicationBootstrap, OnModuleDestroy } from '@nestjs/common';
import { Batcher } from 'promise-batcher';
import { WebhookConfig } from '../config/app-config';
import { AttemptResult, ClaimedDelivery, DeliveriesStore } from './persistence/deliveries.store';
import { nextRetryDelayMs } from './retry-schedule';
import { WebhookMetrics } from './webhook.metrics';
import { Attempt, WebhookSender } from './webhook.sender';
import { hostOf } from '../logging/host-of';

// Finished deliveries are pruned this often, this many rows per statement.
const PRUNE_EVERY_MS = 60_000;
const PRUNE_BATCH = 1000;
// A claim outlives its attempt by this much, so the result is recorded before anyone may take it over.
const LEASE_MARGIN_MS = 5000;

/**
 * Sends the outbox's due deliveries, a bounded number at a time, in the background of the service.
 * Claim (one short statement), send (no transaction, no lock, no pooled connection held), record
 * (one short statement for every result that came in together). Woken right after a commit that
 * wrote deliveries, and polling too: events another instance, or an earlier run, left behind are
 * found within WEBHOOK_POLL_INTERVAL_MS.
 */
export class WebhookDispatcher implements OnApplicationBootstrap, OnModuleDestroy {
  private readonly logger = new Logger('Webhooks');
  private readonly leaseMs: number;
  private readonly inFlight = new Set<Promise<void>>();
  /** Aborted by the shutdown signal, or by the module's destruction if that comes first. */
  private readonly stopped = new AbortController();
  private readonly results: Batcher<{ delivery: ClaimedDelivery; result: AttemptResult }, void>;
  private running = false;
  private loop?: Promise<void>;
  /** A wake() that came while the loop was busy: the next wait ends at once. */
  private woken = false;
  /** The loop's current wait, if it is waiting. */
  private waiting?: { resolve: () => void; timer: NodeJS.Timeout };
  private lastPruneMs = 0;

  constructor(
    private readonly config: WebhookConfig,
    private readonly store: DeliveriesStore,
    private readonly sender: WebhookSender,
    private readonly metrics: WebhookMetrics,
    /** Raised at SIGTERM: sends in flight are aborted and go back to pending; nothing more is claimed. */
    shutdown: AbortSignal,
  ) {
    this.leaseMs = config.timeoutMs + LEASE_MARGIN_MS;
    // Each send in flight listens for the stop: up to `concurrency` listeners, not a leak.
    setMaxListeners(config.concurrency + 10, this.stopped.signal);
    shutdown.addEventListener('abort', () => this.stop(), { once: true });
    // Results that finish in one event-loop turn are recorded by one statement (one commit, one fsync on SQLite).
    this.results = new Batcher({
      batchingFunction: async (results) => {
        await this.store.record(results);
        return results.map(() => undefined);
      },
      maxBatchSize: 500,
      delayFunction: () => new Promise<void>((resolve) => setImmediate(resolve)),
    });
  }

  onApplicationBootstrap(): void {
    this.running = true;
    this.loop = this.run();
  }

  /**
   * Normally the shutdown signal has stopped the loop and aborted the sends in flight already (at
   * SIGTERM, before the listener closed); this waits for the loop and for their claims to be freed
   * (the next start, or another instance, sends them with the same webhook-id). The database is
   * closed after this.
   */
  async onModuleDestroy(): Promise<void> {
    this.stop();
    await this.loop;
    await Promise.all(this.inFlight);
    await this.results.idlePromise();
  }

  private stop(): void {
    this.running = false;
    this.stopped.abort();
    this.wake();
  }

  /** Called after a commit that wrote deliveries: look at the outbox now rather than at the next poll. */
  wake(): void {
    if (this.waiting) this.endWait();
    else this.woken = true;
  }

  private async run(): Promise<void> {
    while (this.running) {
      let full = false;
      try {
        const free = this.config.concurrency - this.inFlight.size;
        if (free > 0) {
          const claimed = await this.store.claim(free, this.leaseMs);
          for (const delivery of claimed) this.track(this.deliver(delivery));
          // As many as there was room for: more may be due, so claim again as soon as a slot frees.
          full = claimed.length === free;
        }
        await this.pruneWhenDue();
      } catch (error) {
        this.logger.warn(`Could not read the webhook outbox; trying again shortly: ${(error as Error).message}`);
      }
      if (!this.running) break;
      if (full || this.inFlight.size >= this.config.concurrency) {
        await Promise.race([...this.inFlight, this.nextWake(this.config.pollIntervalMs)]);
        this.endWait(); // a send ended first: this wait is over too, so its timer must not end a later one
        // Let the other sends that end in this turn end too, so the next claim takes several at once.
        await new Promise<void>((resolve) => setImmediate(resolve));
      } else {
        await this.nextWake(this.config.pollIntervalMs);
      }
    }
  }

  /** Resolves on the next wake() (or at once if one came while the loop was busy), or after `ms`. */
  private nextWake(ms: number): Promise<void> {
    if (this.woken) {
      this.woken = false;
      return Promise.resolve();
    }
    return new Promise((resolve) => {
      this.waiting = { resolve, timer: setTimeout(() => this.endWait(), ms) };
    });
  }

  private endWait(): void {
    const waiting = this.waiting;
    this.waiting = undefined;
    if (waiting === undefined) return;
    clearTimeout(waiting.timer);
    waiting.resolve();
  }

  private track(work: Promise<void>): void {
    const tracked = work.finally(() => this.inFlight.delete(tracked));
    this.inFlight.add(tracked);
  }

  private async deliver(delivery: ClaimedDelivery): Promise<void> {
    const host = hostOf(delivery.url);
    const attempt = await this.sender.send(delivery, this.stopped.signal);
    this.metrics.counted(attempt.outcome);
    const result = this.resultOf(delivery, attempt);
    if (result.kind === 'delivered') {
      this.metrics.latency.observe(Math.max(0, Date.now() - delivery.createdAtMs) / 1000);
      this.logger.debug(`Delivered ${delivery.webhookId} to ${host} (attempt ${delivery.attempts + 1})`);
    } else if (result.kind === 'retry') {
      this.logger.warn(
        `Delivery ${delivery.webhookId} to ${host} failed (attempt ${delivery.attempts + 1}: ${attempt.detail}); ` +
          `retrying in ${Math.round(result.delayMs / 1000)} s`,
      );
    } else if (result.kind === 'failed') {
      this.metrics.failed.inc();
      this.logger.error(`Delivery ${delivery.webhookId} to ${host} failed for good: ${result.error}`);
    }
    try {
      await this.results.getResult({ delivery, result });
    } catch (error) {
      // The lease runs out and the delivery is tried again (at least once), so nothing is lost.
      this.logger.warn(`Could not record delivery ${delivery.webhookId}: ${(error as Error).message}`);
    }
  }

  private resultOf(delivery: ClaimedDelivery, attempt: Attempt): AttemptResult {
    switch (attempt.outcome) {
      case '2xx':
        return { kind: 'delivered' };
      case 'aborted':
        return { kind: 'released' };
      case 'gone':
        return { kind: 'failed', error: `${attempt.detail}: the subscriber asked for no more deliveries` };
    }
    const attempts = delivery.attempts + 1;
    const delayMs = nextRetryDelayMs(this.config.retryScheduleMs, attempts);
    return delayMs === undefined
      ? { kind: 'failed', error: `${attempt.detail} on the last of ${attempts} attempts` }
      : { kind: 'retry', delayMs, error: attempt.detail };
  }

  private async pruneWhenDue(): Promise<void> {
    if (Date.now() - this.lastPruneMs < PRUNE_EVERY_MS) return;
    this.lastPruneMs = Date.now();
    let pruned = 0;
    for (let removed = PRUNE_BATCH; removed === PRUNE_BATCH; pruned += removed) {
      // Between batches, whatever else waits runs first (on SQLite a batch holds the event loop).
      if (pruned > 0) await new Promise<void>((resolve) => setImmediate(resolve));
      removed = await this.store.prune(this.config.retentionMs, PRUNE_BATCH);
    }
    if (pruned > 0) this.logger.log(`Pruned ${pruned} finished webhook deliveries`);
  }
}
