import { Module } from '@nestjs/common';
import { TerminusModule } from '@nestjs/terminus';
import { PlantsModule } from '../plants/plants.module';
import { DatabaseHealthIndicator } from './database.health-indicator';
import { HealthController } from './health.controller';

@Module({
  imports: [TerminusModule.forRoot({ logger: false }), PlantsModule],
  controllers: [HealthController],
  providers: [DatabaseHealthIndicator],
})
export class HealthModule {}
