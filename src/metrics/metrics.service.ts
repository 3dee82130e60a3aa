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
   * The request series by route, method and status, each looked up once, so a request does not
   * build and validate a label object (a series still hashes its labels on each `inc`/`observe`,
   * inside prom-client). Nested maps, not one map keyed by a string joined per request: the route
   * and method strings are the same objects each time, so their hashes are kept, and a request
   * allocates nothing here. Bounded: Node accepts only known methods, and routes are templates.
   */
  private readonly requestSeries = new Map<string, Map<string, Map<number, RequestSeries>>>();

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
    let byMethod = this.requestSeries.get(route);
    if (byMethod === undefined)
      this.requestSeries.set(route, (byMethod = new Map<string, Map<number, RequestSeries>>()));
    let byStatus = byMethod.get(method);
    if (byStatus === undefined) byMethod.set(method, (byStatus = new Map<number, RequestSeries>()));
    let series = byStatus.get(status);
    if (series === undefined) {
      const labels = { method, route, status: String(status) };
      series = { count: this.httpRequests.labels(labels), duration: this.httpDuration.labels(labels) };
      byStatus.set(status, series);
    }
    series.count.inc();
    series.duration.observe(seconds);
  }
}

interface RequestSeries {
  count: Counter.Internal;
  duration: Histogram.Internal<'method' | 'route' | 'status'>;
}
