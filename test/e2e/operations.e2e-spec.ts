import { AddressInfo, createServer } from 'node:net';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { Database as StoreDatabase } from '../../src/database/database';
import { eventually } from '../support/eventually';
import { request } from '../support/http';
import { createTestApp, TEST_METRICS_TOKEN, TestApp } from '../support/test-app';

const get = (url: string, auth: string | false = false) => request(url, { method: 'GET', auth });

describe('operations (e2e): health, request ids, headers, metrics, CORS', () => {
  describe('with the defaults', () => {
    let server: TestApp;
    beforeAll(async () => (server = await createTestApp()));
    afterAll(() => server.destroy());

    it('should answer /health/live and /health/ready with 200 without a token', async () => {
      const live = await get(`${server.url}/health/live`);
      expect(live.status).toBe(200);
      expect(live.body).toEqual({ status: 'ok', info: {}, error: {}, details: {} });
      const ready = await get(`${server.url}/health/ready`);
      expect(ready.body).toEqual({
        status: 'ok',
        info: { database: { status: 'up' } },
        error: {},
        details: { database: { status: 'up' } },
      });
    });

    it('should ask the database once for a flood of readiness probes, not once per probe', async () => {
      const ping = jest.spyOn(server.app.get(StoreDatabase), 'ping');
      try {
        await new Promise((resolve) => setTimeout(resolve, 1000)); // past what an earlier probe left
        const answers = await Promise.all(Array.from({ length: 50 }, () => get(`${server.url}/health/ready`)));
        expect(answers.map((answer) => answer.status)).toEqual(Array.from({ length: 50 }, () => 200));
        expect(ping.mock.calls.length).toBeLessThanOrEqual(2);
      } finally {
        ping.mockRestore();
      }
    });

    it('should echo a valid X-Request-Id and replace an invalid one', async () => {
      const kept = await request(`${server.url}/plants`, {
        body: { id: 1, name: 'x' },
        headers: { 'x-request-id': 'abc-123.x:y_z' },
      });
      expect(kept.headers.get('x-request-id')).toBe('abc-123.x:y_z');
      for (const bad of ['a'.repeat(129), 'has space', 'quote"']) {
        const replaced = await request(`${server.url}/plants`, {
          body: { id: 1, name: 'x' },
          headers: { 'x-request-id': bad },
        });
        expect(replaced.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
      }
      const generated = await get(`${server.url}/health/live`);
      expect(generated.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
    });

    it('should send security headers, and a CSP on the docs without upgrade-insecure-requests', async () => {
      for (const res of [
        await request(`${server.url}/plants`, { body: { id: 2, name: 'x' } }),
        await request(`${server.url}/plants`, { body: { id: 2, name: 'x' }, auth: false }),
        await request(`${server.url}/plants`, { body: { id: 'two', name: 'x' } }),
        await request(`${server.url}/nowhere`, { body: { id: 2, name: 'x' } }),
      ]) {
        expect(res.headers.get('x-content-type-options')).toBe('nosniff');
        expect(res.headers.get('x-frame-options')).toBe('DENY');
        expect(res.headers.get('content-security-policy')).toBe("default-src 'none';frame-ancestors 'none'");
        expect(res.headers.get('strict-transport-security')).toContain('max-age=');
        expect(res.headers.get('referrer-policy')).toBe('no-referrer');
        expect(res.headers.get('cross-origin-resource-policy')).toBe('same-origin');
        expect(res.headers.get('cache-control')).toBe('no-store');
        // Headers for HTML documents only stay off the JSON API.
        expect(res.headers.get('cross-origin-opener-policy')).toBeNull();
      }
      expect((await get(`${server.url}/health/ready`)).headers.get('cache-control')).toBe('no-store');
      const docs = await get(`${server.url}/docs`);
      expect(docs.headers.get('cache-control')).not.toBe('no-store');
      expect(docs.headers.get('x-frame-options')).toBe('SAMEORIGIN');
      expect(docs.headers.get('x-content-type-options')).toBe('nosniff');
      expect(docs.headers.get('cross-origin-opener-policy')).toBe('same-origin');
      const csp = docs.headers.get('content-security-policy') ?? '';
      expect(csp).toContain("default-src 'self'");
      expect(csp).toContain("script-src 'self'");
      expect(csp).not.toContain('upgrade-insecure-requests');
    });

    it('should not answer CORS preflights when CORS_ORIGINS is unset', async () => {
      const res = await request(`${server.url}/plants`, {
        method: 'OPTIONS',
        auth: false,
        headers: { origin: 'https://app.example', 'access-control-request-method': 'POST' },
      });
      expect(res.headers.get('access-control-allow-origin')).toBeNull();
    });

    it('should serve Prometheus metrics to a token of METRICS_TOKENS', async () => {
      await request(`${server.url}/plants`, { body: { id: 3, name: 'Counted' } });
      await request(`${server.url}/plants`, { body: { id: 3, name: 'Counted' } });
      await request(`${server.url}/nowhere/404`, { method: 'GET' });
      await request(`${server.url}/plants/9007199254740993`, { method: 'GET' });
      const anonymous = await get(`${server.url}/metrics`);
      expect(anonymous.status).toBe(401);
      expect(anonymous.body).toEqual({ error: 401, message: 'Authorization header with a Bearer token is required' });
      const res = await get(`${server.url}/metrics`, `Bearer ${TEST_METRICS_TOKEN}`);
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toMatch(/^text\/plain/);
      expect(res.text).toMatch(/^http_requests_total\{method="POST",route="\/plants",status="200"\} \d+$/m);
      expect(res.text).toMatch(/^http_requests_total\{method="GET",route="unmatched",status="404"\} 1$/m);
      // A plant's id never becomes a label: the route template does.
      expect(res.text).toMatch(/^http_requests_total\{method="GET",route="\/plants\/:id",status="404"\} 1$/m);
      expect(res.text).not.toContain('9007199254740993');
      expect(res.text).toMatch(
        /^http_request_duration_seconds_bucket\{le="0\.005",method="POST",route="\/plants",status="200"\} \d+$/m,
      );
      expect(res.text).toMatch(/^plant_store_plants_total\{outcome="created"\} [1-9]\d*$/m);
      expect(res.text).toMatch(/^plant_store_plants_total\{outcome="replayed"\} [1-9]\d*$/m);
      expect(res.text).toMatch(/^process_cpu_user_seconds_total \d/m);
    });

    it('should report not ready, with the Error body, when the database is unusable', async () => {
      const db = new Database(join(server.dataDir, 'plants.db'));
      db.exec('DROP TABLE plants; DROP TABLE kysely_migration');
      db.close();
      // An answer of the database serves readiness for up to a second: the change shows within it.
      await eventually(async () => (await get(`${server.url}/health/ready`)).status === 503);
      const res = await get(`${server.url}/health/ready`);
      expect(res.body).toEqual({ error: 503, message: 'Not ready: database is down' });
      expect((await get(`${server.url}/health/live`)).status).toBe(200);
      const metrics = await get(`${server.url}/metrics`, `Bearer ${TEST_METRICS_TOKEN}`);
      expect(metrics.text).not.toMatch(/plant_store_database_errors_total\{kind="failure"\} [1-9]/);
      await request(`${server.url}/plants`, { body: { id: 4, name: 'x' } });
      const after = await get(`${server.url}/metrics`, `Bearer ${TEST_METRICS_TOKEN}`);
      expect(after.text).toMatch(/^plant_store_database_errors_total\{kind="failure"\} 1$/m);
    });
  });

  describe('with CORS_ORIGINS and public metrics', () => {
    let server: TestApp;
    beforeAll(
      async () =>
        (server = await createTestApp({
          CORS_ORIGINS: 'https://app.example',
          METRICS_PUBLIC: 'true',
        })),
    );
    afterAll(() => server.destroy());

    it('should allow the configured origin only', async () => {
      const preflight = (origin: string) =>
        request(`${server.url}/plants`, {
          method: 'OPTIONS',
          auth: false,
          headers: {
            origin,
            'access-control-request-method': 'POST',
            'access-control-request-headers': 'authorization,content-type',
          },
        });
      const allowed = await preflight('https://app.example');
      expect(allowed.headers.get('access-control-allow-origin')).toBe('https://app.example');
      expect(allowed.headers.get('access-control-allow-headers')).toBe('Authorization, Content-Type, X-Request-Id');
      expect((await preflight('https://evil.example')).headers.get('access-control-allow-origin')).toBeNull();
    });

    it('should serve metrics without a token when METRICS_PUBLIC=true', async () => {
      expect((await get(`${server.url}/metrics`)).status).toBe(200);
    });
  });

  describe('with CORS_ORIGINS, reading pages from a browser', () => {
    let server: TestApp;
    beforeAll(async () => (server = await createTestApp({ CORS_ORIGINS: 'https://app.example' })));
    afterAll(() => server.destroy());

    it('should expose the Link header of a page to the allowed origin', async () => {
      for (const id of [1, 2]) await request(`${server.url}/plants`, { body: { id, name: 'paged' } });
      const page = await request(`${server.url}/plants?limit=1`, {
        method: 'GET',
        headers: { origin: 'https://app.example' },
      });
      expect(page.status).toBe(200);
      expect(page.headers.get('link')).toBe('</plants?limit=1&after=1>; rel="next"');
      expect(page.headers.get('access-control-allow-origin')).toBe('https://app.example');
      expect(page.headers.get('access-control-expose-headers')?.split(/,\s*/)).toEqual(
        expect.arrayContaining(['Link', 'Retry-After', 'X-Request-Id']),
      );
    });
  });

  describe('with METRICS_PORT', () => {
    let server: TestApp;
    let metricsPort: number;
    beforeAll(async () => {
      // A port free a moment ago (a random one could be an ephemeral port another test holds).
      const probe = createServer();
      await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
      metricsPort = (probe.address() as AddressInfo).port;
      await new Promise((resolve) => probe.close(resolve));
      server = await createTestApp({ METRICS_PORT: String(metricsPort), HOST: '127.0.0.1' });
    });
    afterAll(() => server.destroy());

    it('should serve /metrics only on that port, without a token', async () => {
      const res = await get(`http://127.0.0.1:${metricsPort}/metrics`);
      expect(res.status).toBe(200);
      expect(res.text).toContain('# TYPE http_requests_total counter');
      expect((await get(`${server.url}/metrics`, `Bearer ${TEST_METRICS_TOKEN}`)).status).toBe(404);
    });
  });
});
