import { DynamicModule, Global, Module } from '@nestjs/common';
import { AuthModule } from '../auth/auth.module';
import { MetricsController } from './metrics.controller';
import { MetricsService } from './metrics.service';

/** Metrics for every module; `/metrics` on the main port unless METRICS_PORT gives it a port of its own. */
@Global()
@Module({})
export class MetricsModule {
  static forRoot(ownPort: number | undefined): DynamicModule {
    return {
      module: MetricsModule,
      imports: [AuthModule],
      controllers: ownPort === undefined ? [MetricsController] : [],
      providers: [MetricsService],
      exports: [MetricsService],
    };
  }
}
