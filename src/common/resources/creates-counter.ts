import { Counter, Registry } from 'prom-client';

/**
 * A create-once resource's successful creates by outcome, `plant_store_<table>_total`: "created"
 * stored a new one, "replayed" matched one stored (a 409 or a failure counts nothing). Operators
 * read replays there: a client retrying more than it should.
 */
export function createsCounter(registry: Registry, table: string, spoken: string): Counter<'outcome'> {
  return new Counter({
    name: `plant_store_${table}_total`,
    help: `Successful creates: outcome "created" stored a new ${spoken}, "replayed" matched a stored one`,
    labelNames: ['outcome'] as const,
    registers: [registry],
  });
}
