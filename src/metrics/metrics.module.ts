import { DynamicModule, Global, Module } from '@nestjs/common';
import { Registry } from 'prom-client';
import { AuthModule } from '../auth/auth.module';
import { createMetricsRegistry } from './metrics-registry';
import { MetricsController } from './metrics.controller';
import { MetricsService } from './metrics.service';

/**
 * The registry every feature's metrics go into, the HTTP metrics, and `/metrics` on the main port
 * unless METRICS_PORT gives it a port of its own.
 */
@Global()
@Module({})
export class MetricsModule {
  static forRoot(ownPort: number | undefined): DynamicModule {
    return {
      module: MetricsModule,
      imports: [AuthModule],
      controllers: ownPort === undefined ? [MetricsController] : [],
      providers: [{ provide: Registry, useFactory: createMetricsRegistry }, MetricsService],
      exports: [Registry, MetricsService],
    };
  }
}
