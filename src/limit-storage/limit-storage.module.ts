import { Global, Module } from '@nestjs/common';
import { RateLimitStorage } from './rate-limit.storage';

/**
 * The shared counters (in Redis when REDIS_URL is set), always there: the failed-authentication
 * limit counts in them whether or not RATE_LIMIT_PER_MINUTE turns the rate limit on.
 */
@Global()
@Module({ providers: [RateLimitStorage], exports: [RateLimitStorage] })
export class LimitStorageModule {}
