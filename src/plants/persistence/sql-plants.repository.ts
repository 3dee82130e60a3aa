import { Injectable, OnModuleDestroy } from '@nestjs/common';
import { PageQuery } from '../../common/paging/page';
import { conflictMessage } from '../../common/resources/resource-name';
import { ResourceConflictError } from '../../common/errors/resource-conflict.error';
import { Database } from '../../database/database';
import { InsertOnce } from '../../database/insert-once';
import { Plant, PLANT_COLUMNS } from '../plant';
import { PlantCreated, PlantDeleted } from '../plant-events';
import { PlantsRepository } from './plants.repository';
import './plants.migrations';

/**
 * The plants, in whichever store `DatabaseModule` chose, through the shared table path
 * (`InsertOnce`): a row stored once, the same again a replay, other content a 409, new ones committed
 * with their event; keyset pages, and reads and deletes by id. `groupCommit: true` is its option for a
 * write path the bench shows is hot (`--group-commit`).
 */
@Injectable()
export class SqlPlantsRepository implements PlantsRepository, OnModuleDestroy {
  private readonly plants: InsertOnce<typeof PLANT_COLUMNS>;

  constructor(database: Database, created: PlantCreated, deleted: PlantDeleted) {
    this.plants = new InsertOnce(database, {
      what: 'a plant',
      table: 'plants',
      // Each field in its column (absent as NULL); a create the same in every field is a replay.
      columns: PLANT_COLUMNS,
      conflict: ({ id }) =>
        new ResourceConflictError(conflictMessage('plant', id, { differs: 'a different name or tag' })),
      created,
      deleted,
      groupCommit: true,
    });
  }

  /** Waits for the batches in flight; the database module closes the store after this. */
  onModuleDestroy(): Promise<void> {
    return this.plants.idle();
  }

  async create(plant: Plant): Promise<{ readonly created: boolean }> {
    const { created } = await this.plants.create(plant);
    return { created };
  }

  list({ limit, after }: PageQuery): Promise<Plant[]> {
    return this.plants.page(limit, after);
  }

  get(id: bigint): Promise<Plant | undefined> {
    return this.plants.get(id);
  }

  delete(id: bigint): Promise<boolean> {
    return this.plants.delete(id);
  }
}
