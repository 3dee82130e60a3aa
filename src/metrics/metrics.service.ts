import { Injectable } from '@nestjs/common';
import { collectDefaultMetrics, Counter, Histogram, Registry } from 'prom-client';

/** The service's Prometheus metrics, in a registry of its own (so tests and apps do not share one). */
@Injectable()
export class MetricsService {
  readonly registry = new Registry();

  readonly httpRequests = new Counter({
    name: 'http_requests_total',
    help: 'HTTP requests answered, by method, route template and status',
    labelNames: ['method', 'route', 'status'] as const,
    registers: [this.registry],
  });

  readonly httpDuration = new Histogram({
    name: 'http_request_duration_seconds',
    help: 'Time to answer an HTTP request, by method, route template and status',
    labelNames: ['method', 'route', 'status'] as const,
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
    registers: [this.registry],
  });

  readonly plantsCreated = new Counter({
    name: 'plant_store_plants_total',
    help: 'Successful creates: outcome "created" stored a new plant, "replayed" matched a stored one',
    labelNames: ['outcome'] as const,
    registers: [this.registry],
  });

  readonly databaseErrors = new Counter({
    name: 'plant_store_database_errors_total',
    help: 'Failed database operations: kind "unavailable" (unreachable), "timeout" (no answer in time) or "failure" (anything else)',
    labelNames: ['kind'] as const,
    registers: [this.registry],
  });

  /**
   * The request series by method, route and status, each looked up once, so a request does not
   * build and validate a label object (a series still hashes its labels on each `inc`/`observe`,
   * inside prom-client). Bounded: Node accepts only known methods, and routes are templates.
   */
  private readonly requestSeries = new Map<string, RequestSeries>();

  constructor() {
    collectDefaultMetrics({ register: this.registry });
  }

  /** Records one answered request; `route` is the template (`/plants`), never the raw URL. */
  observeRequest(method: string, route: string, status: number, seconds: number): void {
    const key = `${method} ${route} ${status}`;
    let series = this.requestSeries.get(key);
    if (series === undefined) {
      const labels = { method, route, status: String(status) };
      series = { count: this.httpRequests.labels(labels), duration: this.httpDuration.labels(labels) };
      this.requestSeries.set(key, series);
    }
    series.count.inc();
    series.duration.observe(seconds);
  }
}

interface RequestSeries {
  count: Counter.Internal;
  duration: Histogram.Internal<'method' | 'route' | 'status'>;
}
