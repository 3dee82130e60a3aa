import { Injectable } from '@nestjs/common';
import { Counter, Registry } from 'prom-client';

/** Failed database operations, counted by the exception filter that answers them. */
@Injectable()
export class DatabaseErrorsMetrics {
  readonly failed: Counter<'kind'>;

  constructor(registry: Registry) {
    this.failed = new Counter({
      name: 'plant_store_database_errors_total',
      help: 'Failed database operations: kind "unavailable" (unreachable), "timeout" (no answer in time) or "failure" (anything else)',
      labelNames: ['kind'] as const,
      registers: [registry],
    });
  }
}
