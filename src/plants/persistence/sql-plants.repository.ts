import { Injectable, OnModuleDestroy } from '@nestjs/common';
import { Kysely } from 'kysely';
import { Database } from '../../database/database';
import { InsertOnce } from '../../database/insert-once';
import { prepareQuery } from '../../database/prepared-query';
import { Tables } from '../../database/tables';
import { Plant, samePlant } from '../plant';
import { PlantCreated, PlantDeleted } from '../plant-events';
import { PlantConflictError } from './plant-conflict.error';
import { CreateResult, PageQuery, PlantsRepository } from './plants.repository';
import './plants.tables';

interface PlantRow {
  id: bigint;
  name: string;
  tag: string | null;
}

/** A row of the plants table as the store returns it (`InsertOnce.fromStored` reads it). */
type StoredPlantRow = Record<string, unknown>;

/**
 * The page queries of the plants table, written once. Keyset pages on the primary key: a range search
 * from the cursor, whatever the depth, never an OFFSET (the repository tests read their plans).
 * Compiled once each (`prepareQuery`), as they run once per request.
 */
export function plantQueries(db: Kysely<Tables>) {
  return {
    firstPage: prepareQuery<{ limit: number }, StoredPlantRow>(({ limit }) =>
      db.selectFrom('plants').select(['id', 'name', 'tag']).orderBy('id').limit(limit).compile(),
    ),
    pageAfter: prepareQuery<{ after: bigint; limit: number }, StoredPlantRow>(({ after, limit }) =>
      db
        .selectFrom('plants')
        .select(['id', 'name', 'tag'])
        .where('id', '>', after)
        .orderBy('id')
        .limit(limit)
        .compile(),
    ),
  };
}

/**
 * The plants, in whichever store `DatabaseModule` chose: the shared create path (`InsertOnce`, as a
 * generated resource has it) with its one option, the group commit, which the bench shows pays for
 * plants' creates and deletes; and the keyset pages. Each new and each deleted plant commits with its
 * event (`PlantCreated`, `PlantDeleted`: the webhook outbox).
 */
@Injectable()
export class SqlPlantsRepository implements PlantsRepository, OnModuleDestroy {
  private readonly queries: ReturnType<typeof plantQueries>;
  private readonly plants: InsertOnce<Plant, PlantRow>;

  constructor(
    private readonly database: Database,
    db: Kysely<Tables>,
    created: PlantCreated,
    deleted: PlantDeleted,
  ) {
    this.queries = plantQueries(db);
    this.plants = new InsertOnce<Plant, PlantRow>(database, {
      what: 'a plant',
      table: 'plants',
      columns: { id: 'bigint', name: 'text', tag: 'text' },
      toRow: ({ id, name, tag }) => ({ id, name, tag: tag ?? null }),
      fromRow: toPlant,
      same: samePlant,
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

  async list({ limit, after }: PageQuery): Promise<Plant[]> {
    const query = after === undefined ? this.queries.firstPage({ limit }) : this.queries.pageAfter({ after, limit });
    const { rows } = await this.database.execute('read plants', query);
    return rows.map((row) => this.plants.fromStored(row));
  }

  get(id: bigint): Promise<Plant | undefined> {
    return this.plants.get(id);
  }
}

function toPlant({ id, name, tag }: PlantRow): Plant {
  return tag === null ? { id, name } : { id, name, tag };
}
