import { FactoryProvider } from '@nestjs/common';
import { Database } from '../../database/database';
import { PostgresDatabase } from '../../database/postgres-database';
import { SqliteDatabase } from '../../database/sqlite-database';
import { PlantEvents } from '../plant-events';
import { PlantsRepository } from './plants.repository';

/**
 * Picks the storage adapter for the configured database. Each adapter, and its driver, is loaded
 * only when chosen. `PlantEvents` comes from the module given to `PlantsModule.register`.
 */
export const plantsRepositoryProvider: FactoryProvider<Promise<PlantsRepository>> = {
  provide: PlantsRepository,
  inject: [Database, PlantEvents],
  useFactory: async (database: Database, hook: PlantEvents): Promise<PlantsRepository> => {
    switch (database.kind) {
      case 'sqlite': {
        const { SqlitePlantsRepository } = await import('./sqlite-plants.repository');
        return new SqlitePlantsRepository(database as SqliteDatabase, hook);
      }
      case 'postgres': {
        const { PostgresPlantsRepository } = await import('./postgres-plants.repository');
        return new PostgresPlantsRepository(database as PostgresDatabase, hook);
      }
    }
  },
};
