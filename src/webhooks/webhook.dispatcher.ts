import { setMaxListeners } from 'node:events';
import { Injectable, Logger, OnApplicationBootstrap, OnModuleDestroy } from '@nestjs/common';
import { Batcher } from 'promise-batcher';
import { WebhookConfig } from '../config/app-config';
import { SpanKind, SpanStatusCode } from '@opentelemetry/api';
import { ShutdownSignal } from '../lifecycle/shutdown-signal';
import { hostOf, originAttributes } from '../common/networks/host-of';
import { contextFromCarrier, inSpan } from '../tracing/trace-context';
import { attemptResult, THROTTLE_AFTER_SIGNALS } from './dispatch-policy';
import { ClaimedDelivery, Recorded, RecordedResult } from './deliveries';
import { DispatchQueue } from './persistence/dispatch-queue';
import { WebhookMetrics } from './webhook.metrics';
import { WebhookSender } from './webhook.sender';

// Finished deliveries are pruned this often, this many rows per statement.
const PRUNE_EVERY_MS = 60_000;
const PRUNE_BATCH = 1000;
// A claim outlives its attempt by this much, so the result is recorded before anyone may take it over.
const LEASE_MARGIN_MS = 5000;

/**
 * Sends the outbox's due deliveries in the background of the service. Claim (one short
 * transaction), send (no transaction, no lock, no pooled connection held), record (one short
 * transaction for every result that came in together). The claim keeps endpoints apart: each has its
 * own cap on sends in flight (across instances). A failed event retries on its own schedule while the
 * endpoint's other events go at full speed; only answers that say the endpoint itself is in trouble
 * (see `dispatch-policy.ts`) throttle it to one probe at a time, backing off, so a dead endpoint never
 * holds the slots a healthy one needs. Woken right after a commit that wrote deliveries, and polling
 * too: what another instance, an earlier run, a resend or a retry left due is found within
 * WEBHOOK_POLL_INTERVAL_MS.
 */
@Injectable()
export class WebhookDispatcher implements OnApplicationBootstrap, OnModuleDestroy {
  private readonly logger = new Logger('Webhooks');
  private readonly leaseMs: number;
  private readonly inFlight = new Set<Promise<void>>();
  /** Aborted by the shutdown signal, or by the module's destruction if that comes first. */
  private readonly stopped = new AbortController();
  private readonly results: Batcher<RecordedResult, void>;
  private running = false;
  private loop?: Promise<void>;
  /** A wake() that came while the loop was busy: the next wait ends at once. */
  private woken = false;
  /** The loop's current wait, if it is waiting. */
  private waiting?: { resolve: () => void; timer: NodeJS.Timeout };
  private lastPruneMs = 0;

  constructor(
    private readonly config: WebhookConfig,
    private readonly store: DispatchQueue,
    private readonly sender: WebhookSender,
    private readonly metrics: WebhookMetrics,
    /** Raised at SIGTERM: sends in flight are aborted and go back to pending; nothing more is claimed. */
    shutdown: ShutdownSignal,
  ) {
    this.leaseMs = config.timeoutMs + LEASE_MARGIN_MS;
    // Each send in flight listens for the stop: up to `concurrency` listeners, not a leak.
    setMaxListeners(config.concurrency + 10, this.stopped.signal);
    shutdown.signal.addEventListener('abort', () => this.stop(), { once: true });
    // Results that finish in one event-loop turn are recorded by one transaction (one commit).
    this.results = new Batcher({
      batchingFunction: async (results) => {
        const recorded = await this.store.record(results, this.config.disableAfterMs, this.config.retryScheduleMs);
        this.report(recorded);
        return results.map(() => undefined);
      },
      maxBatchSize: 500,
      delayFunction: () => new Promise<void>((resolve) => setImmediate(resolve)),
    });
  }

  /** Says what the record did to endpoints: an operator sees each one disabled, throttled and recovered. */
  private report({ disabled, throttled, recovered }: Recorded): void {
    for (const endpoint of disabled) {
      this.metrics.endpointsDisabled.inc();
      const why =
        endpoint.why === 'gone'
          ? 'the receiver answered 410 Gone'
          : 'no successful delivery for WEBHOOK_DISABLE_AFTER while deliveries kept failing';
      this.logger.warn(
        `Disabled webhook endpoint ${endpoint.id} (${hostOf(endpoint.url)}): ${why}; its pending deliveries are failed. ` +
          'Re-enable it with PATCH {"disabled": false}, then recover it to send what it missed',
      );
    }
    for (const endpoint of throttled) {
      this.logger.warn(
        `Throttled webhook endpoint ${endpoint.id} (${hostOf(endpoint.url)}): ${THROTTLE_AFTER_SIGNALS} answers in a row ` +
          'said it is overloaded, down or wrong (429, 502, 503, 504, 3xx, or no answer); sending one delivery at a ' +
          'time, backing off, until one succeeds',
      );
    }
    for (const endpoint of recovered) {
      this.logger.log(
        `Webhook endpoint ${endpoint.id} (${hostOf(endpoint.url)}) recovered: a delivery succeeded; back to full speed`,
      );
    }
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
    await this.sender.close();
  }

  private stop(): void {
    this.running = false;
    this.stopped.abort();
    this.wake();
  }

  /** Called after a commit that wrote deliveries, or a resend: look at the outbox now rather than at the next poll. */
  wake(): void {
    if (this.waiting) this.endWait();
    else this.woken = true;
  }

  private async run(): Promise<void> {
    while (this.running) {
      try {
        const free = this.config.concurrency - this.inFlight.size;
        if (free > 0) {
          const claimed = await this.store.claim(free, this.leaseMs, this.config.endpointConcurrency);
          for (const delivery of claimed) this.track(this.deliver(delivery));
        }
      } catch (error) {
        this.logger.warn(`Could not read the webhook outbox; trying again shortly: ${(error as Error).message}`);
      }
      try {
        await this.pruneWhenDue();
      } catch (error) {
        this.logger.warn(
          `Could not prune finished webhook deliveries; trying again later: ${(error as Error).message}`,
        );
      }
      if (!this.running) break;
      if (this.inFlight.size > 0) {
        // A send that ends frees a slot, and may end an endpoint's backoff or cap: claim again then.
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
    // A child of the request that committed the event, on whichever instance sends it: one trace from
    // the create to each attempt (the undici span inside it puts `traceparent` on the request).
    const attempt = await inSpan(
      'webhook deliver',
      {
        kind: SpanKind.PRODUCER,
        attributes: {
          'messaging.message.id': delivery.webhookId,
          'plant_store.webhook.endpoint_id': delivery.endpointId,
          'plant_store.webhook.attempt': delivery.attempts + 1,
          // The endpoint's origin only (never its path or query, which may hold a credential).
          ...originAttributes(delivery.url),
        },
      },
      contextFromCarrier(delivery.traceContext),
      async (span) => {
        const sent = await this.sender.send(delivery, this.stopped.signal);
        span.setAttribute('plant_store.webhook.outcome', sent.outcome);
        if (sent.status !== undefined) span.setAttribute('http.response.status_code', sent.status);
        if (sent.outcome !== '2xx') span.setStatus({ code: SpanStatusCode.ERROR, message: sent.detail });
        return sent;
      },
    );
    this.metrics.counted(attempt.outcome);
    // Its schedule counts from its last resend or recover, if any; `attempts` stays the total.
    const result = attemptResult(attempt, delivery.attemptsOnSchedule, this.config.retryScheduleMs);
    const to = `${delivery.webhookId} to ${delivery.endpointId} (${host})`;
    if (result.kind === 'succeeded') {
      this.metrics.latency.observe(Math.max(0, Date.now() - delivery.createdAtMs) / 1000);
      this.logger.debug(`Delivered ${to} (attempt ${delivery.attempts + 1})`);
    } else if (result.kind === 'retry') {
      this.logger.warn(
        `Delivery ${to} failed (attempt ${delivery.attempts + 1}: ${attempt.detail}); ` +
          `retrying in ${Math.round(result.delayMs / 1000)} s`,
      );
    } else if (result.kind === 'failed') {
      this.metrics.failed.inc();
      const why =
        attempt.outcome === 'gone'
          ? `${attempt.detail}: the subscriber has gone away`
          : `${attempt.detail} on the last of ${delivery.attempts + 1} attempts`;
      this.logger.error(`Delivery ${to} failed for good: ${why}`);
    }
    try {
      await this.results.getResult({ delivery, result });
    } catch (error) {
      // The lease runs out and the delivery is tried again (at least once), so nothing is lost.
      this.logger.warn(`Could not record delivery ${delivery.webhookId}: ${(error as Error).message}`);
    }
  }

  private async pruneWhenDue(): Promise<void> {
    if (Date.now() - this.lastPruneMs < PRUNE_EVERY_MS) return;
    this.lastPruneMs = Date.now();
    let pruned = 0;
    for (let removed = PRUNE_BATCH; removed >= PRUNE_BATCH; pruned += removed) {
      // Between batches, whatever else waits runs first (on SQLite a batch holds the event loop).
      if (pruned > 0) await new Promise<void>((resolve) => setImmediate(resolve));
      removed = await this.store.prune(this.config.retentionMs, PRUNE_BATCH);
    }
    if (pruned > 0) this.logger.log(`Pruned ${pruned} finished webhook deliveries and messages`);
  }
}
