import { createHash, randomBytes } from 'node:crypto';
import { Controller, Get } from '@nestjs/common';
import Redis from 'ioredis';
import { CryptoKey, exportSPKI, generateKeyPair, SignJWT } from 'jose';
import { Public } from '../../src/auth/public.decorator';
import { eventually } from '../support/eventually';
import { request } from '../support/http';
import { PrivateRedis } from '../support/redis-server';
import { TcpProxy } from '../support/tcp-proxy';
import { createTestApp, TEST_METRICS_TOKEN, TestApp } from '../support/test-app';

const REDIS_URL = 'redis://127.0.0.1:6379';

/** A token of its own per test, so no two tests (nor two CI runs sharing Redis) share a budget. */
const freshToken = () => randomBytes(16).toString('hex');

/** A public route that is rate limited, as one a team might add: counted by client address. */
@Controller('test-public')
class PublicTestController {
  @Get()
  @Public()
  ping(): { ok: boolean } {
    return { ok: true };
  }
}

/** The statuses of `count` requests, one after another. */
async function statuses(count: number, send: (index: number) => Promise<{ status: number }>): Promise<number[]> {
  const seen: number[] = [];
  for (let index = 0; index < count; index++) seen.push((await send(index)).status);
  return seen;
}

const countOf = (seen: number[], status: number) => seen.filter((s) => s === status).length;

describe('rate limit (e2e)', () => {
  describe('in one instance', () => {
    const token = freshToken();
    const other = freshToken();
    let server: TestApp;
    beforeAll(
      async () =>
        (server = await createTestApp({ RATE_LIMIT_PER_MINUTE: '3', AUTH_TOKENS: `${token},${other}` }, undefined, [
          PublicTestController,
        ])),
    );
    afterAll(() => server.destroy());

    it('should give a token one budget however its Authorization header is spelled, across operations', async () => {
      const spellings = [
        `Bearer ${token}`,
        `bearer ${token}`,
        `BEARER ${token}`,
        `Bearer   ${token}`,
        `bEaReR ${token}`,
      ];
      const seen = await statuses(21, (index) => {
        const auth = spellings[index % spellings.length];
        if (index % 4 === 0) return request(`${server.url}/plants`, { body: { id: index, name: 'spelled' }, auth });
        if (index % 4 === 1) return request(`${server.url}/plants?limit=1`, { method: 'GET', auth });
        if (index % 4 === 2) return request(`${server.url}/plants/${index}`, { method: 'GET', auth });
        return request(`${server.url}/plants/${index}`, { method: 'DELETE', auth });
      });
      expect(countOf(seen, 429)).toBe(18);
      expect(seen.slice(0, 3).every((status) => status !== 429)).toBe(true);
    });

    it('should answer 429 with Retry-After and the Error body past the limit', async () => {
      const limited = await request(`${server.url}/plants`, { body: { id: 1, name: 'x' }, auth: `Bearer ${token}` });
      expect(limited.status).toBe(429);
      expect(limited.body).toEqual({
        error: 429,
        message: 'Rate limit exceeded: at most 3 requests per minute per token',
      });
      expect(Number(limited.headers.get('retry-after'))).toBeGreaterThan(0);
    });

    it('should count only verified principals: bad credentials are 401, and each token has its own budget', async () => {
      // Were the limit checked before authentication, these would count under the client address…
      const refused = await statuses(5, () =>
        request(`${server.url}/plants`, { body: { id: 1, name: 'x' }, auth: 'Bearer not-a-token' }),
      );
      expect(refused).toEqual([401, 401, 401, 401, 401]);
      const missing = await statuses(2, () =>
        request(`${server.url}/plants`, { body: { id: 1, name: 'x' }, auth: false }),
      );
      expect(missing).toEqual([401, 401]);
      // …and the second token, from the same address, would find the budget spent.
      const second = await statuses(4, (index) =>
        request(`${server.url}/plants`, { body: { id: 100 + index, name: 'second' }, auth: `Bearer ${other}` }),
      );
      expect(second).toEqual([200, 200, 200, 429]);
    });

    it('should never limit health, readiness or metrics', async () => {
      for (const [path, auth] of [
        ['/health/live', token],
        ['/health/ready', token],
        ['/metrics', TEST_METRICS_TOKEN],
      ]) {
        const seen = await statuses(6, () =>
          request(`${server.url}${path}`, { method: 'GET', auth: `Bearer ${auth}` }),
        );
        expect(seen).toEqual([200, 200, 200, 200, 200, 200]);
      }
    });

    it('should limit a public route by client address, and ignore X-Forwarded-For without TRUST_PROXY', async () => {
      const seen = await statuses(4, (index) =>
        request(`${server.url}/test-public`, {
          method: 'GET',
          auth: false,
          headers: { 'x-forwarded-for': `203.0.113.${index + 1}` },
        }),
      );
      expect(seen).toEqual([200, 200, 200, 429]);
    });
  });

  describe('with JWTs', () => {
    let server: TestApp;
    let key: CryptoKey;
    const sign = (sub: string, jti: string) =>
      new SignJWT({ sub, jti })
        .setProtectedHeader({ alg: 'ES256' })
        .setIssuer('https://idp.test/')
        .setAudience('plant-store')
        .setExpirationTime('5m')
        .sign(key);
    beforeAll(async () => {
      const pair = await generateKeyPair('ES256');
      key = pair.privateKey;
      server = await createTestApp({
        RATE_LIMIT_PER_MINUTE: '2',
        AUTH_JWT_PUBLIC_KEY: await exportSPKI(pair.publicKey),
        AUTH_JWT_ISSUER: 'https://idp.test/',
        AUTH_JWT_AUDIENCE: 'plant-store',
      });
    });
    afterAll(() => server.destroy());

    it('should give each subject one budget, whichever of its tokens is presented', async () => {
      const seen = await statuses(3, async (index) =>
        request(`${server.url}/plants?limit=1`, { method: 'GET', auth: `Bearer ${await sign('alice', `a${index}`)}` }),
      );
      expect(seen).toEqual([200, 200, 429]);
      const bob = await request(`${server.url}/plants?limit=1`, {
        method: 'GET',
        auth: `Bearer ${await sign('bob', 'b')}`,
      });
      expect(bob.status).toBe(200);
    });
  });

  describe('behind a trusted proxy (TRUST_PROXY)', () => {
    let server: TestApp;
    beforeAll(
      async () =>
        (server = await createTestApp({ RATE_LIMIT_PER_MINUTE: '1', TRUST_PROXY: '127.0.0.1/8' }, undefined, [
          PublicTestController,
        ])),
    );
    afterAll(() => server.destroy());

    it('should count each forwarded client address on its own', async () => {
      const from = (address: string) =>
        request(`${server.url}/test-public`, { method: 'GET', auth: false, headers: { 'x-forwarded-for': address } });
      expect((await from('198.51.100.1')).status).toBe(200);
      expect((await from('198.51.100.1')).status).toBe(429);
      expect((await from('198.51.100.2')).status).toBe(200);
    });
  });

  describe('with REDIS_URL: two instances share one budget', () => {
    const token = freshToken();
    let servers: TestApp[];
    beforeAll(async () => {
      const env = { RATE_LIMIT_PER_MINUTE: '4', AUTH_TOKENS: token, REDIS_URL };
      servers = [await createTestApp(env), await createTestApp(env)];
    });
    afterAll(async () => {
      await Promise.all(servers.map((server) => server.destroy()));
      await deleteCounters(token);
    });

    it('should refuse the fifth request in a minute, whichever instance takes it', async () => {
      const seen = await statuses(8, (index) =>
        request(`${servers[index % 2].url}/plants`, { body: { id: index, name: 'shared' }, auth: `Bearer ${token}` }),
      );
      expect(seen).toEqual([200, 200, 200, 200, 429, 429, 429, 429]);
    });

    it('should not take its own shutdown for an outage', async () => {
      await servers[1].close();
      // ioredis reports the closed connection a moment after it is asked to close.
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect(servers[1].logs.join('\n')).not.toContain('Redis is unreachable');
    });
  });

  describe('with REDIS_URL, when Redis goes away', () => {
    const token = freshToken();
    const proxy = new TcpProxy('127.0.0.1', 6379);
    let server: TestApp;
    const create = (id: number) =>
      request(`${server.url}/plants`, { body: { id, name: 'redis-down' }, auth: `Bearer ${token}` });
    beforeAll(async () => {
      await proxy.start();
      server = await createTestApp({
        RATE_LIMIT_PER_MINUTE: '2',
        AUTH_TOKENS: token,
        REDIS_URL: `redis://127.0.0.1:${proxy.port}`,
      });
    });
    afterAll(async () => {
      await server.destroy();
      await proxy.cut();
      await deleteCounters(token);
    });

    it('should count in the instance instead: never a 500, a warning, a metric, and Redis again once back', async () => {
      expect(await statuses(1, create)).toEqual([200]);
      await proxy.cut();
      // Counted in the process from here: a fresh budget of 2, then 429s, never an error.
      expect(await statuses(3, (index) => create(10 + index))).toEqual([200, 200, 429]);
      expect(server.logs.join('\n')).toMatch(/Redis is unreachable \(.+\): rate limits are counted per instance/);
      expect(server.logs.join('\n')).not.toContain(String(proxy.port) + '/');
      const metrics = await request(`${server.url}/metrics`, { method: 'GET', auth: `Bearer ${TEST_METRICS_TOKEN}` });
      expect(Number(/^plant_store_rate_limit_fallbacks_total (\d+)$/m.exec(metrics.text)?.[1])).toBeGreaterThanOrEqual(
        3,
      );
      expect((await request(`${server.url}/health/ready`, { method: 'GET', auth: false })).status).toBe(200);

      await proxy.start();
      await eventually(() => server.logs.join('\n').includes('Redis is reachable again'));
      // Redis kept the first request: one more fits, then the shared budget is spent.
      expect(await statuses(2, (index) => create(20 + index))).toEqual([200, 429]);
    });

    it('should answer on the command timeout while Redis hangs (one request waits, not each)', async () => {
      await deleteCounters(token);
      const logged = server.logs.length;
      proxy.dropped = '';
      proxy.freeze();
      try {
        // Answered (counted here; the previous test's in-process budget may be spent), not left waiting
        // on Redis: the command timed out, which opened the breaker…
        for (const id of [30, 31, 32]) expect([200, 429]).toContain((await create(id)).status);
        expect(server.logs.slice(logged)).toEqual([
          expect.stringMatching(/^Redis is unreachable \(Command timed out\): rate limits are counted per instance/),
        ]);
        // …so only the first request sent Redis its script; the others did not ask it.
        expect(proxy.dropped.match(/evalsha/gi)).toHaveLength(1);
      } finally {
        proxy.thaw();
      }
    });
  });

  describe('with REDIS_URL, when Redis is frozen (SIGSTOP)', () => {
    const token = freshToken();
    const redis = new PrivateRedis();
    let server: TestApp;
    const create = async (id: number) =>
      (await request(`${server.url}/plants`, { body: { id, name: 'frozen' }, auth: `Bearer ${token}` })).status;
    /** How many times Redis ran the throttler's script (a frozen Redis runs what it was sent once thawed). */
    const scriptRuns = async () => {
      const client = new Redis(redis.url, { maxRetriesPerRequest: 1 });
      try {
        return Number(/^cmdstat_evalsha:calls=(\d+)/m.exec(await client.info('commandstats'))?.[1] ?? 0);
      } finally {
        client.disconnect();
      }
    };
    const fallbacks = async () => {
      const metrics = await request(`${server.url}/metrics`, { method: 'GET', auth: `Bearer ${TEST_METRICS_TOKEN}` });
      return Number(/^plant_store_rate_limit_fallbacks_total (\d+)$/m.exec(metrics.text)?.[1]);
    };
    beforeAll(async () => {
      await redis.start();
      server = await createTestApp({ RATE_LIMIT_PER_MINUTE: '1000', AUTH_TOKENS: token, REDIS_URL: redis.url });
    });
    afterAll(async () => {
      await server.destroy();
      await redis.stop();
    });

    it('should pay one command timeout, then answer without asking Redis until a probe finds it again', async () => {
      expect(await create(1)).toBe(200);
      const runsBefore = await scriptRuns();
      expect(await fallbacks()).toBe(0);
      redis.freeze();
      try {
        // The first request waits for the 500 ms command timeout and opens the breaker.
        expect(await create(2)).toBe(200);
        expect(server.logs.join('\n')).toMatch(
          /Redis is unreachable \(Command timed out\): rate limits are counted per instance/,
        );
        // Then no request asks Redis, so none waits for a timeout: all are counted in the instance.
        const after = [];
        for (let id = 3; id < 13; id++) after.push(await create(id));
        expect(after).toEqual(Array.from({ length: 10 }, () => 200));
      } finally {
        redis.thaw();
      }
      await eventually(() => server.logs.join('\n').includes('Redis is reachable again'));
      // Thawed, Redis ran what it had been sent meanwhile: the first request's script, no other.
      expect((await scriptRuns()) - runsBefore).toBe(1);
      expect(await fallbacks()).toBe(11);
      expect(await create(20)).toBe(200);
    });
  });
});

/** Removes a token's counters from the shared Redis: tests leave no state behind. */
async function deleteCounters(token: string): Promise<void> {
  const redis = new Redis(REDIS_URL, { lazyConnect: true, maxRetriesPerRequest: 1 });
  try {
    await redis.connect();
    const principal = `token:${createHash('sha256').update(token).digest('base64url')}`;
    const keys = await redis.keys(`*${principal}*`);
    if (keys.length > 0) await redis.del(...keys);
  } finally {
    redis.disconnect();
  }
}
