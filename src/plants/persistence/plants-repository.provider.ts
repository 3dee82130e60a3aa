import { FactoryProvider } from '@nestjs/common';
import { AppConfig } from '../../config/app-config';
import { PlantsRepository } from './plants.repository';
import { PostgresPlantsRepository } from './postgres-plants.repository';
import { SqlitePlantsRepository } from './sqlite-plants.repository';

/** Picks the storage adapter from the validated `DATABASE_URL`. */
export const plantsRepositoryProvider: FactoryProvider<PlantsRepository> = {
  provide: PlantsRepository,
  inject: [AppConfig],
  useFactory: (config: AppConfig): PlantsRepository => {
    switch (config.database.kind) {
      case 'sqlite':
        return new SqlitePlantsRepository(config.database.path);
      case 'postgres':
        return new PostgresPlantsRepository(config.database);
    }
  },
};
