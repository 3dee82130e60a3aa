import { DynamicModule, Module } from '@nestjs/common';
import { publishes } from '../events/publishes';
import { PlantsRepository } from './persistence/plants.repository';
import { SqlPlantsRepository } from './persistence/sql-plants.repository';
import { PlantsController } from './plants.controller';
import { PlantsMetrics } from './plants.metrics';
import { PlantsService } from './plants.service';
import { PLANT_CREATED, PLANT_DELETED } from './plant-events';

type ModuleImport = NonNullable<DynamicModule['imports']>[number];

@Module({})
export class PlantsModule {
  /**
   * `events`: the module that provides the `EventPublisher` (the webhook outbox), to which plants binds
   * its ports `PlantCreated` and `PlantDeleted` (`publishes(…)`): what commits together with each new
   * and each deleted plant. Imported explicitly, so plants depends on that port and on nothing else of it.
   */
  static register(events: ModuleImport): DynamicModule {
    return {
      module: PlantsModule,
      imports: [events],
      controllers: [PlantsController],
      providers: [
        PlantsService,
        PlantsMetrics,
        { provide: PlantsRepository, useClass: SqlPlantsRepository },
        publishes(PLANT_CREATED),
        publishes(PLANT_DELETED),
      ],
      exports: [PlantsRepository],
    };
  }
}
