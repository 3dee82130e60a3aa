import { collectDefaultMetrics, Counter, Registry } from 'prom-client';
import { spanTally, tracingOn } from '../tracing/trace-context';

/**
 * The service's Prometheus registry, one per app (so tests and apps do not share one), with Node's
 * default metrics. Provided under prom-client's `Registry` class: a feature registers its own
 * metrics in it without importing anything of this folder.
 */
export function createMetricsRegistry(): Registry {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  if (tracingOn()) registerSpanTally(registry);
  return registry;
}

/** What became of the sampled spans (tracing on only), as the span processor counted them. */
function registerSpanTally(registry: Registry): void {
  new Counter({
    name: 'plant_store_trace_spans_total',
    help: 'Spans of sampled requests by outcome: exported (the collector took them), dropped (the span queue was full: raise OTEL_BSP_MAX_QUEUE_SIZE, or sample less), failed (the collector did not accept them)',
    labelNames: ['outcome'] as const,
    registers: [registry],
    collect() {
      this.reset();
      for (const outcome of ['exported', 'dropped', 'failed'] as const) this.inc({ outcome }, spanTally[outcome]);
    },
  });
}
