import { Module } from '@nestjs/common';
import { plantsRepositoryProvider } from './persistence/plants-repository.provider';
import { PlantsController } from './plants.controller';
import { PlantsService } from './plants.service';

@Module({
  controllers: [PlantsController],
  providers: [PlantsService, plantsRepositoryProvider],
})
export class PlantsModule {}
