import { DynamicModule, Module } from '@nestjs/common';
import { APP_GUARD } from '@nestjs/core';
import { getOptionsToken, getStorageToken, ThrottlerModuleOptions } from '@nestjs/throttler';
import { AuthModule } from '../auth/auth.module';
import { RateLimitConfig } from '../config/app-config';
import { PrincipalThrottlerGuard } from './principal-throttler.guard';
import { RateLimitStorage } from '../limit-storage/rate-limit.storage';

/**
 * RATE_LIMIT_PER_MINUTE requests per principal (all operations together); 429 with Retry-After
 * beyond. Off when unset. Health and metrics are never limited (`@SkipThrottle`).
 *
 * It provides what `ThrottlerModule` would (the options and the storage, under the library's
 * tokens), because the storage is a provider with a lifecycle: it connects to Redis and closes it.
 */
@Module({})
export class RateLimitModule {
  static forRoot(config: RateLimitConfig | undefined): DynamicModule {
    if (config === undefined) return { module: RateLimitModule };
    return {
      module: RateLimitModule,
      imports: [AuthModule],
      providers: [
        { provide: getOptionsToken(), inject: [RateLimitConfig], useFactory: throttlerOptions },
        // The counters are LimitStorageModule's (global), shared with the failed-authentication limit.
        { provide: getStorageToken(), useExisting: RateLimitStorage },
        // Registered after the bearer guard (AppModule's APP_GUARD), so it sees the verified principal.
        { provide: APP_GUARD, useClass: PrincipalThrottlerGuard },
      ],
    };
  }
}

/** The throttler's options for RATE_LIMIT_PER_MINUTE: one window of a minute, and the 429's words. */
function throttlerOptions(config: RateLimitConfig): ThrottlerModuleOptions {
  return {
    throttlers: [{ ttl: 60_000, limit: config.perMinute }],
    errorMessage: `Rate limit exceeded: at most ${config.perMinute} requests per minute per token`,
  };
}
