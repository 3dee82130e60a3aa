import { Agent, get, IncomingHttpHeaders } from 'node:http';
import { Controller, Get, Post } from '@nestjs/common';
import { ApiExcludeController } from '@nestjs/swagger';
import { request } from '../support/http';
import { createTestSchema, describeOnEachStore, TestSchema } from '../support/postgres';
import { PrivateRedis } from '../support/redis-server';
import { createTestApp, TEST_TOKEN, TestApp } from '../support/test-app';

// The whole minute of the block, or a second less if the clock ticked between two requests.
const LIMITED = {
  error: 429,
  message: expect.stringMatching(
    /^Too many failed authentications from this address \(at most 3 per minute\); retry after (59|60) s$/,
  ) as string,
};

// CONTRACT.md, "Authentication": failed authentications are counted per client address
// (AUTH_FAILURES_PER_MINUTE); past the limit, requests from that address without a valid credential
// get 429 with Retry-After, while a valid credential from the same address still passes.
describe('failed authentications per client address (e2e)', () => {
  describeOnEachStore('in one instance on %s', (postgres) => {
    let server: TestApp;
    let schema: TestSchema | undefined;
    beforeAll(async () => {
      schema = postgres ? await createTestSchema() : undefined;
      server = await createTestApp({
        ...(schema ? { DATABASE_URL: schema.url } : {}),
        AUTH_FAILURES_PER_MINUTE: '3',
        TRUST_PROXY: '127.0.0.1/8',
      });
    });
    afterAll(async () => {
      await server.destroy();
      await schema?.drop();
    });

    const plants = (auth: string | false, from: string, body?: unknown) =>
      request(`${server.url}/plants`, {
        method: body === undefined ? 'GET' : 'POST',
        auth,
        body,
        headers: { 'x-forwarded-for': from },
      });

    it('should answer 401 up to the limit, then 429 with Retry-After, and still let a valid token through', async () => {
      const from = '198.51.100.7';
      for (const auth of ['Bearer wrong-1', false, 'Basic abc'] as const) {
        expect((await plants(auth, from)).status).toBe(401);
      }
      const limited = await plants('Bearer wrong-2', from);
      expect(limited.status).toBe(429);
      expect(limited.body).toEqual(LIMITED);
      expect(limited.headers.get('retry-after')).toMatch(/^(59|60)$/);
      // A body does not change it: the credential is looked at (and counted) before the body is read.
      expect((await plants(false, from, { id: 1, name: 'x' })).body).toEqual(LIMITED);
      // The address's real users keep working.
      expect((await plants(`Bearer ${TEST_TOKEN}`, from, { id: 1, name: 'Fern' })).body).toEqual({ name: 'Fern' });
      expect((await plants(`Bearer ${TEST_TOKEN}`, from)).status).toBe(200);
      // Another address has its own count, as TRUST_PROXY resolves it.
      expect((await plants('Bearer wrong-1', '198.51.100.8')).status).toBe(401);
    });

    it('should count an IPv6 client by its /64, and an IPv4-mapped address as its IPv4 address', async () => {
      const seen = [];
      for (const from of ['2001:db8:1:2::a', '2001:db8:1:2::b', '2001:db8:1:2:ffff::1', '2001:db8:1:2::c']) {
        seen.push((await plants('Bearer wrong', from)).status);
      }
      expect(seen).toEqual([401, 401, 401, 429]);
      // The next /64 is another client.
      expect((await plants('Bearer wrong', '2001:db8:1:3::a')).status).toBe(401);

      for (const from of ['198.51.100.9', '::ffff:198.51.100.9', '198.51.100.9']) {
        expect((await plants('Bearer wrong', from)).status).toBe(401);
      }
      const mapped = await plants('Bearer wrong', '::ffff:198.51.100.9');
      expect(mapped.status).toBe(429);
      expect(mapped.body).toEqual(LIMITED);
    });

    it('should keep the connection open after a 401 or a 404 answered to a request without a body', async () => {
      const agent = new Agent({ keepAlive: true, maxSockets: 1 });
      const send = (path: string, authorization: string, from: string) =>
        new Promise<{ status?: number; headers: IncomingHttpHeaders; reused: boolean }>((resolve, reject) => {
          const sent = get(
            `${server.url}${path}`,
            { agent, headers: { authorization, 'x-forwarded-for': from } },
            (response) => {
              response.resume();
              response.on('end', () =>
                resolve({ status: response.statusCode, headers: response.headers, reused: sent.reusedSocket }),
              );
            },
          );
          sent.on('error', reject);
        });
      try {
        const answers = [
          await send('/plants/424242', 'Bearer wrong', '198.51.100.24'),
          await send('/nowhere', 'Bearer wrong', '198.51.100.24'),
          await send('/plants/424242', `Bearer ${TEST_TOKEN}`, '198.51.100.24'),
        ];
        expect(answers.map(({ status, headers, reused }) => [status, headers.connection, reused])).toEqual([
          [401, 'keep-alive', false],
          [404, 'keep-alive', true],
          [404, 'keep-alive', true],
        ]);
      } finally {
        agent.destroy();
      }
    });
  });

  // A protected route outside the document: its failures are answered by Nest's guard and the
  // exception filter, where the document's operations are answered before Nest (authenticate-before-body.hook.ts).
  @ApiExcludeController()
  @Controller('undocumented')
  class UndocumentedController {
    @Get()
    read() {
      return { read: true };
    }

    @Post()
    write() {
      return { written: true };
    }
  }

  describe('answered before Nest, as Nest answers them', () => {
    let server: TestApp;
    beforeAll(async () => {
      server = await createTestApp({ AUTH_FAILURES_PER_MINUTE: '3', TRUST_PROXY: '127.0.0.1/8' }, undefined, [
        UndocumentedController,
      ]);
    });
    afterAll(() => server.destroy());

    /** What a client sees of an answer, but for what differs on every answer (id, date). */
    const seen = async (path: string, from: string, auth: string | false, body?: unknown) => {
      const answer = await request(`${server.url}${path}`, {
        method: body === undefined ? 'GET' : 'POST',
        auth,
        body,
        headers: { 'x-forwarded-for': from },
      });
      const headers = Object.fromEntries(
        [...answer.headers].filter(([name]) => !['x-request-id', 'date', 'keep-alive'].includes(name)),
      );
      // The seconds left of the block may tick between the two answers.
      return { status: answer.status, headers, text: answer.text.replace(/retry after \d+ s/, 'retry after N s') };
    };

    it('should send the same 401s and 429 for an operation of the document as for a route Nest refuses', async () => {
      const failures = ['Bearer wrong', false, 'Basic abc', 'Bearer wrong'] as const;
      const early = [];
      const inNest = [];
      for (const auth of failures) early.push(await seen('/plants/1', '198.51.100.20', auth));
      for (const auth of failures) inNest.push(await seen('/undocumented', '198.51.100.21', auth));
      expect(early.map(({ status }) => status)).toEqual([401, 401, 401, 429]);
      expect(early[0].headers['www-authenticate']).toBe('Bearer realm="plant-store", error="invalid_token"');
      expect(early[3].headers['retry-after']).toMatch(/^(59|60)$/);
      early[3].headers['retry-after'] = inNest[3].headers['retry-after'];
      expect(early).toEqual(inNest);
      // With a body: refused before it is read, the connection closed once it is drained.
      expect(await seen('/plants', '198.51.100.22', 'Bearer wrong', { id: 1, name: 'x' })).toEqual(
        await seen('/undocumented', '198.51.100.23', 'Bearer wrong', { id: 1, name: 'x' }),
      );
      // A valid credential goes through to Nest on both.
      expect((await seen('/undocumented', '198.51.100.21', `Bearer ${TEST_TOKEN}`)).status).toBe(200);
      expect((await seen('/plants/1', '198.51.100.20', `Bearer ${TEST_TOKEN}`)).status).toBe(404);
    });
  });

  describe('with REDIS_URL: two instances share the count', () => {
    const redis = new PrivateRedis();
    let first: TestApp;
    let second: TestApp;
    beforeAll(async () => {
      await redis.start();
      const env = { AUTH_FAILURES_PER_MINUTE: '3', REDIS_URL: redis.url };
      [first, second] = await Promise.all([createTestApp(env), createTestApp(env)]);
    });
    afterAll(async () => {
      await Promise.all([first.destroy(), second.destroy()]);
      await redis.stop();
    });

    it('should refuse the fourth failure from one address, whichever instance takes it', async () => {
      const bad = (server: TestApp) => request(`${server.url}/plants`, { method: 'GET', auth: 'Bearer wrong' });
      const seen = [];
      for (const server of [first, second, first, second]) seen.push((await bad(server)).status);
      expect(seen).toEqual([401, 401, 401, 429]);
      expect((await request(`${second.url}/plants`, { method: 'GET' })).status).toBe(200);
    });
  });
});
