import { once } from 'node:events';
import { setTimeout as delay } from 'node:timers/promises';
import { Injectable, Logger, OnApplicationShutdown, OnModuleInit } from '@nestjs/common';
import { ThrottlerStorage } from '@nestjs/throttler';
import Redis from 'ioredis';
import { Counter, Gauge, Registry } from 'prom-client';
import { AppConfig } from '../config/app-config';
import { CircuitBreaker } from './circuit-breaker';
import { RedisThrottlerStorage } from './redis-throttler-storage';
import { WindowCount, WindowCounter } from './window-counter';

/** What the storage answers for a hit (the library does not export the type's name). */
type ThrottlerStorageRecord = Awaited<ReturnType<ThrottlerStorage['increment']>>;

/** How long start-up waits for Redis before serving with per-process counters until it answers. */
const CONNECT_WAIT_MS = 2000;
/** A Redis that does not answer within this is treated as down for that request. */
const COMMAND_TIMEOUT_MS = 500;
/**
 * Keys the in-process window counter holds at or below their limit, and as many past it: a few MB
 * with the failed authentications' keys, so a flood of addresses cannot grow the heap. 10,000
 * addresses past the default limit (600 a minute) are 100,000 failures a second, more than one
 * instance answers.
 */
const WINDOW_CAPACITY = 10_000;
/** After a failure, requests are counted here, and Redis is probed once, this often, until it answers. */
const COOL_DOWN_MS = 2000;

/**
 * The counters of the rate limit and of failed authentications: in Redis when REDIS_URL is set, so
 * every instance shares one budget per principal (or per address); in this process otherwise.
 *
 * Redis down or hung fails open to this process's counters, never to a 500 or a wait: a circuit
 * breaker opens at the first failure or timeout, requests are then counted here without asking
 * Redis, and one background PING every COOL_DOWN_MS decides when to go back. So a hung Redis costs
 * one command timeout, not one per request. The outage is logged once when it starts and once when
 * it ends, and each request counted here meanwhile counts in `plant_store_rate_limit_fallbacks_total`.
 * Readiness does not depend on Redis.
 */
@Injectable()
export class RateLimitStorage implements ThrottlerStorage, OnModuleInit, OnApplicationShutdown {
  private readonly logger = new Logger('RateLimit');
  /** The failed authentications by client address. */
  private readonly localWindows = new WindowCounter(WINDOW_CAPACITY);
  /**
   * The rate limit's budgets by principal, apart from the addresses above (a flood of wrong tokens
   * must not push a principal's count out). Not the throttler's own in-memory storage: it keeps one
   * expiry per hit and filters them all on each request, so a busy principal's every request pays
   * for the minute's hits.
   */
  private readonly localBudgets = new WindowCounter(WINDOW_CAPACITY);
  private readonly redis?: Redis;
  private readonly shared?: RedisThrottlerStorage;
  private readonly breaker?: CircuitBreaker;
  private readonly fallbacks: Counter;
  private closing = false;
  /** What the last failure was, for the warning the breaker's opening logs. */
  private reason?: string;

  constructor(config: AppConfig, registry: Registry) {
    this.fallbacks = new Counter({
      name: 'plant_store_rate_limit_fallbacks_total',
      help: 'Requests counted by this instance alone because Redis (REDIS_URL) did not answer',
      registers: [registry],
    });
    const windows = this.localWindows;
    new Gauge({
      name: 'plant_store_auth_failure_keys_held',
      help: `Client addresses (an IPv6 client by its /64) whose failed authentications this instance counts itself (without REDIS_URL, or while Redis is away); at most ${2 * WINDOW_CAPACITY}`,
      registers: [registry],
      collect() {
        this.set(windows.size);
      },
    });
    const { redisUrl } = config;
    if (redisUrl === undefined) return;
    const redis = new Redis(redisUrl, {
      // Fail at once while disconnected, rather than queue the request behind a reconnect.
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      commandTimeout: COMMAND_TIMEOUT_MS,
      connectTimeout: CONNECT_WAIT_MS,
      // Reconnect for as long as the process runs, at most every 2 s.
      retryStrategy: (attempt) => Math.min(attempt * 100, 2000),
    });
    this.redis = redis;
    this.breaker = new CircuitBreaker({
      coolDownMs: COOL_DOWN_MS,
      probe: () => redis.ping(),
      onChange: (closed) => this.logChange(closed),
    });
    // ioredis reports each failed reconnect here; the breaker logs the outage once.
    redis.on('error', (error: Error) => this.down(error));
    redis.on('close', () => this.down(new Error('connection closed')));
    this.shared = RedisThrottlerStorage.on(redis);
  }

  /** Where the counters live, for the start-up log. */
  get description(): string {
    return this.redis === undefined ? 'in process' : 'Redis';
  }

  async onModuleInit(): Promise<void> {
    if (this.redis === undefined || this.redis.status === 'ready') return;
    const ready = once(this.redis, 'ready').then(() => true);
    const waited = await Promise.race([ready, delay(CONNECT_WAIT_MS, false, { ref: false })]);
    if (!waited) this.down(new Error(`no answer within ${CONNECT_WAIT_MS} ms`));
  }

  async increment(
    key: string,
    ttl: number,
    limit: number,
    blockDuration: number,
    throttlerName: string,
  ): Promise<ThrottlerStorageRecord> {
    return this.counted(
      (shared) => shared.increment(key, ttl, limit, blockDuration, throttlerName),
      () => this.budgetHit(key, ttl, limit, blockDuration, throttlerName),
    );
  }

  /**
   * One hit in this process, as the Redis script counts it: a fixed window that the first hit starts,
   * and past the limit a block of `blockDuration` from that hit, after which a new window starts.
   * Times in seconds, rounded up, as the throttler's storages answer them.
   */
  private budgetHit(
    key: string,
    ttl: number,
    limit: number,
    blockDuration: number,
    throttlerName: string,
  ): ThrottlerStorageRecord {
    const block = blockDuration > 0 ? blockDuration : undefined;
    const { limited, hits, resetInMs } = this.localBudgets.hit(`${key}:${throttlerName}`, ttl, limit, block);
    const seconds = Math.ceil(resetInMs / 1000);
    return { totalHits: hits, timeToExpire: seconds, isBlocked: limited, timeToBlockExpire: limited ? seconds : 0 };
  }

  /**
   * One hit on a fixed-window counter (the failed authentications), past its limit after `limit`
   * hits in the window its first hit starts. Both ways cost the same at any number of keys: in Redis,
   * one INCR, PEXPIRE and PTTL, the key gone when its window ends; in this process (without Redis, or
   * while it is away, like `increment`), a `WindowCounter` of fixed capacity. Counted in this process,
   * the answer comes at once, not as a promise: a failed authentication then makes none.
   */
  hit(key: string, windowMs: number, limit: number): WindowCount | Promise<WindowCount> {
    if (this.redis === undefined) return this.localWindows.hit(key, windowMs, limit);
    return this.counted(
      async (_shared, redis) => {
        const results = await redis.multi().incr(key).pexpire(key, windowMs, 'NX').pttl(key).exec();
        const [[, count], , [, ttl]] = results as [[null, number], unknown, [null, number]];
        return { limited: count > limit, hits: count, resetInMs: ttl > 0 ? ttl : windowMs };
      },
      () => this.localWindows.hit(key, windowMs, limit),
    );
  }

  /**
   * The in-process window counters: the keys they hold (`plant_store_auth_failure_keys_held`) and the
   * entries their hits have looked at so far. Both stay bounded per hit whatever the number of keys.
   */
  get inProcessWindows(): { readonly size: number; readonly visits: number } {
    return this.localWindows;
  }

  /** The same for the rate limit's budgets counted in this process (`increment` without Redis). */
  get inProcessBudgets(): { readonly size: number; readonly visits: number } {
    return this.localBudgets;
  }

  /**
   * Counts in Redis while the breaker is closed; in this process without Redis, while the breaker is
   * open, or when Redis fails this call (which opens the breaker).
   */
  private async counted<T>(
    inRedis: (shared: RedisThrottlerStorage, redis: Redis) => Promise<T>,
    inProcess: () => T | Promise<T>,
  ): Promise<T> {
    if (this.redis === undefined || this.shared === undefined) return inProcess();
    if (this.breaker!.closed) {
      try {
        return await inRedis(this.shared, this.redis);
      } catch (error) {
        this.down(error as Error);
      }
    }
    this.fallbacks.inc();
    return inProcess();
  }

  onApplicationShutdown(): void {
    this.closing = true;
    this.breaker?.stop();
    this.redis?.disconnect(false);
  }

  private down(error: Error): void {
    if (this.closing) return;
    this.reason = (error as NodeJS.ErrnoException).code ?? error.message;
    this.breaker?.trip();
  }

  private logChange(closed: boolean): void {
    if (closed) {
      this.logger.log('Redis is reachable again: rate limits are shared by every instance');
    } else {
      this.logger.warn(
        `Redis is unreachable (${this.reason ?? 'no answer'}): rate limits are counted per instance until it is back`,
      );
    }
  }
}
