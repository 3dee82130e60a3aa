import { collectDefaultMetrics, Registry } from 'prom-client';

/**
 * The service's Prometheus registry, one per app (so tests and apps do not share one), with Node's
 * default metrics. Provided under prom-client's `Registry` class: a feature registers its own
 * metrics in it without importing anything of this folder.
 */
export function createMetricsRegistry(): Registry {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  return registry;
}
