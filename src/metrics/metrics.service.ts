import { Injectable } from '@nestjs/common';
import { Counter, Histogram, Registry } from 'prom-client';

/**
 * The HTTP metrics of every request, in the service's registry. Each feature keeps its own metrics
 * beside its code and registers them in the same `Registry` (provided by `MetricsModule`).
 */
@Injectable()
export class MetricsService {
  readonly httpRequests: Counter<'method' | 'route' | 'status'>;
  readonly httpDuration: Histogram<'method' | 'route' | 'status'>;

  /**
   * The request series by method, route and status, each looked up once, so a request does not
   * build and validate a label object (a series still hashes its labels on each `inc`/`observe`,
   * inside prom-client). Bounded: Node accepts only known methods, and routes are templates.
   */
  private readonly requestSeries = new Map<string, RequestSeries>();

  constructor(readonly registry: Registry) {
    this.httpRequests = new Counter({
      name: 'http_requests_total',
      help: 'HTTP requests answered, by method, route template and status',
      labelNames: ['method', 'route', 'status'] as const,
      registers: [registry],
    });
    this.httpDuration = new Histogram({
      name: 'http_request_duration_seconds',
      help: 'Time to answer an HTTP request, by method, route template and status',
      labelNames: ['method', 'route', 'status'] as const,
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
      registers: [registry],
    });
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
