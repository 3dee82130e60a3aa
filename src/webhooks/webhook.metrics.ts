import { Injectable } from '@nestjs/common';
import { Counter, Gauge, Histogram, Registry } from 'prom-client';
import { SharedResult } from '../http/shared-result';
import { DispatchQueue } from './persistence/dispatch-queue';
import { AttemptOutcome } from './webhook.sender';

const BACKLOG_SHARED_MS = 1000;

/** The webhook's Prometheus metrics, in the service's registry. */
@Injectable()
export class WebhookMetrics {
  readonly attempts: Counter<'outcome'>;
  readonly failed: Counter;
  readonly latency: Histogram;
  readonly endpointsDisabled: Counter;

  constructor(registry: Registry, store: DispatchQueue) {
    const registers = [registry];
    this.attempts = new Counter({
      name: 'plant_store_webhook_attempts_total',
      help: 'Webhook delivery attempts by outcome: 2xx, 3xx (not followed), 4xx, 5xx, gone (410), timeout, network, blocked (a blocked network)',
      labelNames: ['outcome'] as const,
      registers,
    });
    this.failed = new Counter({
      name: 'plant_store_webhook_deliveries_failed_total',
      help: 'Webhook deliveries given up: the retry schedule used up, or the subscriber answered 410 Gone',
      registers,
    });
    this.endpointsDisabled = new Counter({
      name: 'plant_store_webhook_endpoints_disabled_total',
      help: 'Webhook endpoints disabled by the service: the receiver answered 410 Gone, or no success for WEBHOOK_DISABLE_AFTER while failing',
      registers,
    });
    this.latency = new Histogram({
      name: 'plant_store_webhook_delivery_latency_seconds',
      help: 'From the commit of a new plant to the 2xx of its subscriber, retries included',
      buckets: [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 1800, 7200, 86400],
      registers,
    });
    // Read from the outbox when scraped, so they are right on every instance (they share it on
    // PostgreSQL). One query for both: the backlog gauge, registered first, is collected first and
    // sets the age gauge too.
    const oldestAge = new Gauge({
      name: 'plant_store_webhook_oldest_pending_age_seconds',
      help: 'Age of the oldest pending webhook delivery; 0 when none is pending',
      registers: [],
    });
    // The scrape may be public (METRICS_PUBLIC): however many come, the outbox is read at most once a second.
    const backlog = new SharedResult(() => store.backlog(), BACKLOG_SHARED_MS);
    new Gauge({
      name: 'plant_store_webhook_backlog',
      help: 'Webhook deliveries still pending (due now or waiting for a retry)',
      registers,
      async collect() {
        const { pending, oldestCreatedAtMs } = await backlog.get();
        this.set(pending);
        oldestAge.set(oldestCreatedAtMs === undefined ? 0 : Math.max(0, (Date.now() - oldestCreatedAtMs) / 1000));
      },
    });
    registry.registerMetric(oldestAge);
    const throttled = new SharedResult(() => store.throttledEndpoints(), BACKLOG_SHARED_MS);
    new Gauge({
      name: 'plant_store_webhook_endpoints_throttled',
      help: 'Enabled webhook endpoints in throttled state: 5 endpoint signals in a row (429, 502, 503, 504, 3xx, no answer), so one probe at a time, backing off, until a 2xx',
      registers,
      async collect() {
        this.set(await throttled.get());
      },
    });
  }

  counted(outcome: AttemptOutcome): void {
    if (outcome !== 'aborted') this.attempts.inc({ outcome });
  }
}
