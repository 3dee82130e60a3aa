import { DynamicModule, Module } from '@nestjs/common';
import { publishes } from '../events/publishes';
import { PlantsRepository } from './persistence/plants.repository';
import { SqlPlantsRepository } from './persistence/sql-plants.repository';
import { PlantsController } from './plants.controller';
import { PlantsService } from './plants.service';
import { PLANT_CREATED, PLANT_DELETED } from './plant-events';

type ModuleImport = NonNullable<DynamicModule['imports']>[number];

@Module({})
export class PlantsModule {
  /** `events`: the module that provides the `EventPublisher` (AppModule hands it the webhooks). */
  static register(events: ModuleImport): DynamicModule {
    return {
      module: PlantsModule,
      imports: [events],
      controllers: [PlantsController],
      providers: [
        PlantsService,
        { provide: PlantsRepository, useClass: SqlPlantsRepository },
        publishes(PLANT_CREATED),
        publishes(PLANT_DELETED),
      ],
    };
  }
}
