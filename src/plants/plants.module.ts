import { Module } from '@nestjs/common';
import { PlantsRepository } from './persistence/plants.repository';
import { plantsRepositoryProvider } from './persistence/plants-repository.provider';
import { PlantsController } from './plants.controller';
import { PlantsService } from './plants.service';

@Module({
  controllers: [PlantsController],
  providers: [PlantsService, plantsRepositoryProvider],
  exports: [PlantsRepository],
})
export class PlantsModule {}
