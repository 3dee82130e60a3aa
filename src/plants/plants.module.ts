import { DynamicModule, Module } from '@nestjs/common';
import { PlantsRepository } from './persistence/plants.repository';
import { SqlPlantsRepository } from './persistence/sql-plants.repository';
import { PlantsController } from './plants.controller';
import { PlantsMetrics } from './plants.metrics';
import { PlantsService } from './plants.service';

type ModuleImport = NonNullable<DynamicModule['imports']>[number];

@Module({})
export class PlantsModule {
  /**
   * `events`: the module that provides `PlantEvents`, what commits together with new plants (the
   * webhook outbox). Imported explicitly, so plants depends on that port and on nothing else of it.
   */
  static register(events: ModuleImport): DynamicModule {
    return {
      module: PlantsModule,
      imports: [events],
      controllers: [PlantsController],
      providers: [PlantsService, PlantsMetrics, { provide: PlantsRepository, useClass: SqlPlantsRepository }],
      exports: [PlantsRepository],
    };
  }
}
