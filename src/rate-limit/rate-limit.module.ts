import { DynamicModule, Module } from '@nestjs/common';
import { APP_GUARD } from '@nestjs/core';
import { ThrottlerModule } from '@nestjs/throttler';
import { TokenThrottlerGuard } from './token-throttler.guard';

/** RATE_LIMIT_PER_MINUTE requests per token; 429 with Retry-After beyond. Off when unset. */
@Module({})
export class RateLimitModule {
  static forRoot(perMinute: number | undefined): DynamicModule {
    if (perMinute === undefined) return { module: RateLimitModule };
    return {
      module: RateLimitModule,
      imports: [
        ThrottlerModule.forRoot({
          throttlers: [{ ttl: 60_000, limit: perMinute }],
          errorMessage: `Rate limit exceeded: at most ${perMinute} requests per minute per token`,
        }),
      ],
      // Registered after the bearer guard (AppModule's APP_GUARD), so only authenticated calls count.
      providers: [{ provide: APP_GUARD, useClass: TokenThrottlerGuard }],
    };
  }
}
