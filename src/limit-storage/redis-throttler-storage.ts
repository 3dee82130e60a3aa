import Redis, { Result } from 'ioredis';

/** One hit's answer, as `@nestjs/throttler`'s `ThrottlerStorage.increment` gives it (seconds). */
export interface RedisThrottlerRecord {
  totalHits: number;
  timeToExpire: number;
  isBlocked: boolean;
  timeToBlockExpire: number;
}

/**
 * One hit on the throttler's window and block, atomically: INCR the window's counter (its expiry set by
 * the first hit), block the key for `blockDuration` once the window passes `limit`, and start a new
 * window when the block has run out. The keys and the script are those of
 * `@nest-lab/throttler-storage-redis` 1.2 (MIT; the script after wyattjoh/rate-limit-redis), which
 * this replaces because it declares `@nestjs/common` ≤ 11: instances of either share their counters.
 */
const SCRIPT = `
local hitKey = KEYS[1]
local blockKey = KEYS[2]
local ttl = tonumber(ARGV[1])
local limit = tonumber(ARGV[2])
local blockDuration = tonumber(ARGV[3])
local totalHits = redis.call('INCR', hitKey)
local timeToExpire = redis.call('PTTL', hitKey)
if timeToExpire <= 0 then
  redis.call('PEXPIRE', hitKey, ttl)
  timeToExpire = ttl
end
local isBlocked = redis.call('GET', blockKey)
local timeToBlockExpire = 0
if isBlocked then
  timeToBlockExpire = redis.call('PTTL', blockKey)
elseif totalHits > limit then
  redis.call('SET', blockKey, 1, 'PX', blockDuration)
  isBlocked = '1'
  timeToBlockExpire = blockDuration
end
if isBlocked and timeToBlockExpire <= 0 then
  redis.call('DEL', blockKey)
  redis.call('SET', hitKey, 1, 'PX', ttl)
  totalHits = 1
  timeToExpire = ttl
  isBlocked = false
end
return { totalHits, timeToExpire, isBlocked and 1 or 0, timeToBlockExpire }
`;

/** The rate limit's counters in Redis: `@nestjs/throttler`'s storage contract over one ioredis client. */
export class RedisThrottlerStorage {
  constructor(private readonly redis: Redis) {}

  async increment(
    key: string,
    ttl: number,
    limit: number,
    blockDuration: number,
    throttlerName: string,
  ): Promise<RedisThrottlerRecord> {
    const slot = `{${key}:${throttlerName}}`;
    // EVALSHA, falling back to EVAL once per connection when Redis does not hold the script yet.
    const result = await this.redis.evalWithSha(`${slot}:hits`, `${slot}:blocked`, ttl, limit, blockDuration);
    if (!Array.isArray(result) || result.length !== 4 || !result.every((value) => typeof value === 'number')) {
      throw new TypeError(`Redis answered the throttler's script with ${String(result)}`);
    }
    const [totalHits, timeToExpire, isBlocked, timeToBlockExpire] = result;
    return {
      totalHits,
      timeToExpire: Math.ceil(timeToExpire / 1000),
      isBlocked: isBlocked === 1,
      timeToBlockExpire: Math.ceil(timeToBlockExpire / 1000),
    };
  }

  /** Defines the script on `redis` (ioredis' `defineCommand`): once per client, before the first hit. */
  static on(redis: Redis): RedisThrottlerStorage {
    redis.defineCommand('evalWithSha', { numberOfKeys: 2, lua: SCRIPT });
    return new RedisThrottlerStorage(redis);
  }
}

declare module 'ioredis' {
  interface RedisCommander<Context> {
    evalWithSha(
      hitKey: string,
      blockKey: string,
      ttl: number,
      limit: number,
      blockDuration: number,
    ): Result<unknown, Context>;
  }
}
