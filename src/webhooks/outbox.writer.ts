import { randomUUID } from 'node:crypto';
import BetterSqlite3 from 'better-sqlite3';
import { PoolClient } from 'pg';
import { PostgresDatabase } from '../database/postgres-database';
import { PlantsCreatedHook } from '../plants/persistence/plants-created.hook';
import { Plant } from '../plants/plant';
import { newPlantPayload } from './new-plant.payload';
import { NewDelivery } from './persistence/deliveries.store';
import { insertDeliveriesPostgres } from './persistence/postgres-deliveries.store';
import { insertDeliveriesSqlite } from './persistence/sqlite-deliveries.store';

/**
 * The transactional outbox's writer: inside the transaction that inserts new plants, one pending
 * delivery per plant and subscriber, so a 200 means its events are as durable as the plant, and
 * no event exists for a plant that was not stored. After the commit it wakes the dispatcher.
 */
export class OutboxWriter extends PlantsCreatedHook {
  constructor(
    private readonly urls: readonly string[],
    /** The PostgreSQL database when that is the store; unused on SQLite. */
    private readonly postgres: PostgresDatabase | undefined,
    private readonly wake: () => void,
  ) {
    super();
  }

  inSqlite(connection: BetterSqlite3.Database, plants: readonly Plant[]): void {
    insertDeliveriesSqlite(connection, this.deliveriesOf(plants));
  }

  async inPostgres(client: PoolClient, plants: readonly Plant[]): Promise<void> {
    if (this.postgres === undefined) throw new Error('A PostgreSQL outbox write on an SQLite store');
    await insertDeliveriesPostgres(this.postgres, client, this.deliveriesOf(plants));
  }

  committed(): void {
    this.wake();
  }

  private deliveriesOf(plants: readonly Plant[]): NewDelivery[] {
    return plants.flatMap((plant) => {
      const payload = newPlantPayload(plant);
      // One id per event and subscriber, kept on every retry: the receiver's deduplication key.
      return this.urls.map((url) => ({ webhookId: `msg_${randomUUID().replaceAll('-', '')}`, url, payload }));
    });
  }
}
