import { Injectable, OnModuleDestroy } from '@nestjs/common';
import { PageQuery } from '../../common/paging/page';
import { Database } from '../../database/database';
import { InsertOnce } from '../../database/insert-once';
import { Plant, PLANT_COLUMNS } from '../plant';
import { PlantCreated, PlantDeleted } from '../plant-events';
import { PlantConflictError } from './plant-conflict.error';
import { CreateResult, PlantsRepository } from './plants.repository';
import './plants.tables';

/**
 * The plants, in whichever store `DatabaseModule` chose: the shared table path (`InsertOnce`, as a
 * generated resource has it: create once, keyset pages, get, delete) with its one option, the group
 * commit, which the bench shows pays for plants' creates and deletes. Each new and each deleted plant
 * commits with its event (`PlantCreated`, `PlantDeleted`: the webhook outbox).
 */
@Injectable()
export class SqlPlantsRepository implements PlantsRepository, OnModuleDestroy {
  private readonly plants: InsertOnce<typeof PLANT_COLUMNS>;

  constructor(database: Database, created: PlantCreated, deleted: PlantDeleted) {
    this.plants = new InsertOnce(database, {
      what: 'a plant',
      table: 'plants',
      columns: PLANT_COLUMNS,
      conflict: (plant) => new PlantConflictError(plant.id),
      created,
      deleted,
      groupCommit: true,
    });
  }

  /** Waits for the batches in flight; the database module closes the store after this. */
  onModuleDestroy(): Promise<void> {
    return this.plants.idle();
  }

  async create(plant: Plant): Promise<CreateResult> {
    const { value, created } = await this.plants.create(plant);
    return { plant: value, created };
  }

  delete(id: bigint): Promise<boolean> {
    return this.plants.delete(id);
  }

  list({ limit, after }: PageQuery): Promise<Plant[]> {
    return this.plants.page(limit, after);
  }

  get(id: bigint): Promise<Plant | undefined> {
    return this.plants.get(id);
  }
}
