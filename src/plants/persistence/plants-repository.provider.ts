import { FactoryProvider } from '@nestjs/common';
import { AppConfig } from '../../config/app-config';
import { PlantsRepository } from './plants.repository';

/**
 * Picks the storage adapter from the validated `DATABASE_URL`. Each adapter, and its driver, is
 * loaded only when chosen: `pg` alone holds about 1.5 MiB of heap that an SQLite instance never uses.
 */
export const plantsRepositoryProvider: FactoryProvider<Promise<PlantsRepository>> = {
  provide: PlantsRepository,
  inject: [AppConfig],
  useFactory: async (config: AppConfig): Promise<PlantsRepository> => {
    switch (config.database.kind) {
      case 'sqlite': {
        const { SqlitePlantsRepository } = await import('./sqlite-plants.repository');
        return new SqlitePlantsRepository(config.database.path);
      }
      case 'postgres': {
        const { PostgresPlantsRepository } = await import('./postgres-plants.repository');
        return new PostgresPlantsRepository(config.database);
      }
    }
  },
};
