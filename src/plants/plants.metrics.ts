import { Injectable } from '@nestjs/common';
import { Counter, Registry } from 'prom-client';

/** The plants feature's Prometheus metrics, in the service's registry. */
@Injectable()
export class PlantsMetrics {
  readonly created: Counter<'outcome'>;

  constructor(registry: Registry) {
    this.created = new Counter({
      name: 'plant_store_plants_total',
      help: 'Successful creates: outcome "created" stored a new plant, "replayed" matched a stored one',
      labelNames: ['outcome'] as const,
      registers: [registry],
    });
  }
}
