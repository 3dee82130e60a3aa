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
   * build and validate a label object. Nested maps, not one map keyed by a string joined per
   * request: the route and method strings are the same objects each time, so their hashes are kept.
   * Bounded: Node accepts only known methods, and routes are templates.
   */
  private readonly requestSeries = new Map<string, Map<string, Map<number, RequestSeries>>>();
  /** Every series, for the scrape. */
  private readonly allSeries: RequestSeries[] = [];

  constructor(readonly registry: Registry) {
    const allSeries = this.allSeries;
    this.httpRequests = new Counter({
      name: 'http_requests_total',
      help: 'HTTP requests answered, by method, route template and status',
      labelNames: ['method', 'route', 'status'] as const,
      registers: [registry],
      // A request adds one to a number of its series (no label object, no hash of its labels: one
      // `inc` did both); the counter reads them at each scrape.
      collect() {
        this.reset();
        for (const series of allSeries) this.inc(series.labels, series.count);
      },
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
      series = { labels, count: 0, duration: this.httpDuration.labels(labels) };
      byStatus.set(status, series);
      this.allSeries.push(series);
    }
    series.count++;
    series.duration.observe(seconds);
  }
}

interface RequestSeries {
  readonly labels: Record<'method' | 'route' | 'status', string>;
  count: number;
  readonly duration: Histogram.Internal<'method' | 'route' | 'status'>;
}
