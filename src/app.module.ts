import { DynamicModule, Module } from '@nestjs/common';
import { APP_FILTER, APP_GUARD, APP_PIPE } from '@nestjs/core';
import { AuthModule } from './auth/auth.module';
import { BearerAuthGuard } from './auth/bearer-auth.guard';
import { APP_MIGRATIONS } from './app.migrations';
import { AppConfig } from './config/app-config';
import { ConfigModule } from './config/config.module';
import { DatabaseModule } from './database/database.module';
import { AllExceptionsFilter } from './error-responses/all-exceptions.filter';
import { DatabaseErrorsMetrics } from './error-responses/database-errors.metrics';
import { HealthModule } from './health/health.module';
import { RequestValidationPipe } from './validation/request-validation.pipe';
import { LifecycleModule } from './lifecycle/lifecycle.module';
import { LoggingModule } from './logging/logging.module';
import { MetricsModule } from './metrics/metrics.module';
import { PlantsModule } from './plants/plants.module';
import { LimitStorageModule } from './limit-storage/limit-storage.module';
import { RateLimitModule } from './rate-limit/rate-limit.module';
import { WebhooksModule } from './webhooks/webhooks.module';

/**
 * The whole service. It takes the validated configuration from its caller (`main.ts`, or a test)
 * rather than reading the environment, so a test builds exactly what production runs.
 */
@Module({})
export class AppModule {
  static forRoot(config: AppConfig): DynamicModule {
    // One instance of the webhook module, imported here and by plants (for plants' event ports).
    const webhooks = WebhooksModule.forRoot();
    return {
      module: AppModule,
      imports: [
        ConfigModule.forRoot(config),
        LifecycleModule,
        DatabaseModule.forRoot(APP_MIGRATIONS),
        webhooks,
        LoggingModule,
        MetricsModule.forRoot(config.metrics.port),
        AuthModule,
        PlantsModule.register(webhooks),
        HealthModule,
        LimitStorageModule,
        RateLimitModule.forRoot(config.rateLimit),
      ],
      providers: [
        DatabaseErrorsMetrics,
        { provide: APP_GUARD, useExisting: BearerAuthGuard },
        {
          provide: APP_PIPE,
          useFactory: (appConfig: AppConfig) => new RequestValidationPipe(appConfig.validationPipe),
          inject: [AppConfig],
        },
        { provide: APP_FILTER, useClass: AllExceptionsFilter },
      ],
    };
  }
}
