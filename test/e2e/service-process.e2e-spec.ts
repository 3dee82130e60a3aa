import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AddressInfo, createServer } from 'node:net';
import { APP_MIGRATIONS } from '../../src/app.migrations';
import { inNameOrder } from '../../src/database/migration';
import { request } from '../support/http';
import { runUntilExit, ServiceProcess, startService } from '../support/service-process';

// In production a static token has at least 32 characters.
const PRODUCTION_TOKEN = 'process-token-long-enough-for-production';

describe('node dist/main.js (e2e, the production entry point)', () => {
  let dir: string;
  let service: ServiceProcess | undefined;

  beforeEach(() => (dir = mkdtempSync(join(tmpdir(), 'plant-store-process-'))));
  afterEach(async () => {
    await service?.stop('SIGKILL');
    service = undefined;
    rmSync(dir, { recursive: true, force: true });
  });

  const env = (extra: NodeJS.ProcessEnv = {}) => ({
    DATABASE_URL: `sqlite:${join(dir, 'plants.db')}`,
    DATA_DIR: dir,
    AUTH_TOKENS: 'process-token',
    ...extra,
  });
  const create = (url: string, body: unknown, token = 'process-token') =>
    request(`${url}/plants`, { body, auth: `Bearer ${token}` });

  describe('when a 200 was sent', () => {
    it('should keep the plant through kill -9 right after the response', async () => {
      service = await startService(env());
      const created = await create(service.url, '{"id":9223372036854775807,"name":"Survivor","tag":"tough"}');
      expect(created.body).toEqual({ name: 'Survivor', tag: 'tough' });
      expect(await service.stop('SIGKILL')).toBeNull();

      service = await startService(env());
      const conflict = await create(service.url, '{"id":9223372036854775807,"name":"Other"}');
      expect(conflict.body).toEqual({
        error: 409,
        message: 'A plant with id 9223372036854775807 already exists with a different name or tag',
      });
      expect((await create(service.url, '{"id":9223372036854775807,"name":"Survivor","tag":"tough"}')).status).toBe(
        200,
      );
    });

    it('should close cleanly on SIGTERM and keep the plant', async () => {
      service = await startService(env());
      expect((await create(service.url, { id: 5, name: 'Graceful' })).status).toBe(200);
      expect(await service.stop('SIGTERM')).toBe(0);
      service = await startService(env());
      expect((await create(service.url, { id: 5, name: 'Changed' })).status).toBe(409);
    });
  });

  describe('when SIGTERM arrives during a stream of creates', () => {
    it('should finish what it accepted, keep every plant it answered 200, and exit 0', async () => {
      service = await startService(env());
      const running = service;
      const answered: number[] = [];
      let nextId = 1;
      // Four clients creating plants back to back until the server stops answering.
      const client = async () => {
        for (;;) {
          const id = nextId++;
          try {
            const res = await create(running.url, { id, name: `stream ${id}` });
            if (res.status === 200) answered.push(id);
          } catch {
            return; // connection refused or closed: the server is gone
          }
          if (id > 5000) return;
        }
      };
      const clients = Promise.all([client(), client(), client(), client()]);
      while (answered.length < 50) await new Promise((resolve) => setTimeout(resolve, 10));
      const exitCode = running.stop('SIGTERM');
      await clients;
      expect(await exitCode).toBe(0);
      expect(answered.length).toBeGreaterThanOrEqual(50);

      service = await startService(env());
      const restarted = service;
      const checks = await Promise.all(answered.map((id) => create(restarted.url, { id, name: 'changed' })));
      expect(checks.filter((res) => res.status !== 409)).toEqual([]);
    });
  });

  describe('logs', () => {
    it('should write pretty logs without colours when they go to a file or a pipe', async () => {
      service = await startService(env({ LOG_FORMAT: 'pretty' }));
      await create(service.url, { id: 70, name: 'Plain' });
      expect(await service.stop('SIGTERM')).toBe(0);
      expect(service.output()).toContain('Shutdown complete');
      expect(service.output()).not.toContain('\u001b[');
    });

    it('should write one JSON line per request with its id, route, status and time, and never the token', async () => {
      service = await startService(env({ NODE_ENV: 'production', AUTH_TOKENS: PRODUCTION_TOKEN }));
      await request(`${service.url}/plants`, {
        body: { id: 7, name: 'Logged' },
        auth: `Bearer ${PRODUCTION_TOKEN}`,
        headers: { 'x-request-id': 'trace-42' },
      });
      await request(`${service.url}/plants`, { body: { id: 8, name: 'x' }, auth: 'Bearer wrong-secret-token' });
      await service.stop('SIGTERM');
      const lines = service.logs();
      const line = lines.find((entry) => (entry.req as { id?: string } | undefined)?.id === 'trace-42');
      expect(line).toMatchObject({
        level: 30,
        route: '/plants',
        req: { id: 'trace-42', method: 'POST', url: '/plants' },
        res: { statusCode: 200 },
        responseTime: expect.any(Number),
      });
      const refused = lines.filter((entry) => (entry.res as { statusCode?: number } | undefined)?.statusCode === 401);
      expect(refused).toEqual([expect.objectContaining({ level: 30, route: '/plants' })]);
      // One route key per line, taken at the end of the request.
      expect(service.output()).not.toContain('"route":"unmatched"');
      expect(service.output()).not.toContain(PRODUCTION_TOKEN);
      expect(service.output()).not.toContain('wrong-secret-token');
    });

    it('should write the line of every request answered before a SIGTERM sent right after them', async () => {
      service = await startService(env());
      // More lines than the logger gathers into one write (4 KiB), so some are still held at the signal.
      const ids = Array.from({ length: 120 }, (_, index) => `before-sigterm-${index}`);
      const answers = await Promise.all(
        ids.map((id, index) =>
          request(`${service!.url}/plants`, {
            body: { id: index + 1, name: 'Logged' },
            auth: 'Bearer process-token',
            headers: { 'x-request-id': id },
          }),
        ),
      );
      expect(answers.map(({ status }) => status)).toEqual(ids.map(() => 200));
      expect(await service.stop('SIGTERM')).toBe(0);
      const logged = new Set(service.logs().map((line) => (line.req as { id?: string } | undefined)?.id));
      expect(ids.filter((id) => !logged.has(id))).toEqual([]);
      expect(service.logs().map(({ msg }) => msg)).toContain('Shutdown complete');
    });

    it('should say once at start-up what it runs with and where it listens, and when shutdown is complete', async () => {
      service = await startService(env({ HOST: '0.0.0.0', RATE_LIMIT_PER_MINUTE: '60' }));
      const port = new URL(service.url).port;
      expect((await create(`http://127.0.0.1:${port}`, { id: 1, name: 'x' })).status).toBe(200);
      expect(await service.stop('SIGTERM')).toBe(0);
      const messages = service.logs().map((line) => String(line.msg));
      const summaries = messages.filter((msg) => msg.startsWith('Plant Store 1.0.0 on Node '));
      expect(summaries).toEqual([
        `Plant Store 1.0.0 on Node ${process.version}; store: SQLite file ${join(dir, 'plants.db')}; ` +
          `migrations: ${inNameOrder(APP_MIGRATIONS)
            .map(({ name }) => name)
            .join(', ')}; listening on http://0.0.0.0:${port}; ` +
          'auth: 1 static token(s); rate limit: 60/min per principal; ' +
          'failed authentications: at most 600/min per client address; counters: in this instance; ' +
          'webhooks: endpoints managed at /webhooks/endpoints (0 admin token(s)); validation: compiled rules; ' +
          'request log: every request',
      ]);
      expect(messages[messages.length - 1]).toBe('Shutdown complete');
    });
  });

  describe('when no AUTH_TOKENS are configured outside production', () => {
    it('should make a development token, keep it in the data folder, and print a ready curl line', async () => {
      // HOST unset: the default outside production, the loopback interface only.
      service = await startService(env({ AUTH_TOKENS: '', HOST: '' }));
      const token = readFileSync(join(dir, 'dev-token'), 'utf8').trim();
      expect(statSync(join(dir, 'dev-token')).mode & 0o777).toBe(0o600);
      const port = new URL(service.url).port;
      expect(service.url).toBe(`http://127.0.0.1:${port}`);
      expect(service.logs().map((line) => line.msg)).toContainEqual(
        expect.stringContaining(
          `curl -X POST http://127.0.0.1:${port}/plants -H "Authorization: Bearer ${token}" -H "Content-Type: application/json" -d '{"id": 1, "name": "Monstera", "tag": "tropical"}'`,
        ),
      );
      expect((await create(service.url, { id: 1, name: 'Monstera' }, token)).status).toBe(200);
      expect((await create(service.url, { id: 2, name: 'x' }, 'process-token')).status).toBe(401);

      await service.stop('SIGTERM');
      service = await startService(env({ AUTH_TOKENS: '' }));
      expect((await create(service.url, { id: 1, name: 'Monstera' }, token)).status).toBe(200);
    });
  });

  describe('when the configuration is bad', () => {
    it.each<[string, NodeJS.ProcessEnv, string]>([
      [
        'production without tokens',
        { NODE_ENV: 'production', AUTH_TOKENS: '' },
        'Invalid configuration: AUTH_TOKENS (or AUTH_JWKS_URL / AUTH_JWT_PUBLIC_KEY) must be set when NODE_ENV=production',
      ],
      [
        'a port that is not a number',
        { PORT: 'abc' },
        'Invalid configuration: PORT must be an integer between 0 and 65535',
      ],
      [
        'an unknown database scheme',
        { DATABASE_URL: 'mysql://root:hunter2@localhost/plants' },
        'Invalid configuration: DATABASE_URL must be postgres://…, postgresql://… or sqlite:<path>',
      ],
      [
        'a blocked address in WEBHOOK_URLS',
        {
          WEBHOOK_URLS: 'http://0x7f.1:9000/hooks?token=hunter2',
          WEBHOOK_SECRET: `whsec_${Buffer.alloc(32, 7).toString('base64')}`,
        },
        'Invalid configuration: each of WEBHOOK_URLS must not point to a private or special-purpose address; ' +
          'open its range with WEBHOOK_ALLOWED_NETWORKS (CIDR ranges, comma-separated)',
      ],
    ])('should refuse to start on %s with one clear line', async (_label, extra, line) => {
      const { code, stderr } = await runUntilExit(env(extra));
      expect(code).toBe(1);
      expect(stderr).toBe(`${line}\n`);
    });

    it('should retry an unreachable PostgreSQL with backoff, then stop with one line', async () => {
      const { code, stderr, stdout } = await runUntilExit(
        env({ DATABASE_URL: 'postgres://postgres@127.0.0.1:1/plants', DATABASE_CONNECT_ATTEMPTS: '2' }),
      );
      expect(code).toBe(1);
      expect(stdout).toContain(
        'PostgreSQL at 127.0.0.1:1/plants is unreachable (attempt 1 of 2): connect ECONNREFUSED 127.0.0.1:1; retrying in 200 ms',
      );
      expect(stderr).toBe(
        'Start-up failed: PostgreSQL at 127.0.0.1:1/plants is unreachable after 2 attempt(s): connect ECONNREFUSED 127.0.0.1:1; ' +
          'check DATABASE_URL (and DATABASE_CONNECT_ATTEMPTS to wait longer)\n',
      );
    });

    it.each<[string, (port: number) => NodeJS.ProcessEnv, (port: number) => string]>([
      [
        'PORT',
        (port) => ({ PORT: String(port) }),
        (port) =>
          `Start-up failed: port ${port} on 127.0.0.1 is already in use: stop what listens there, or set PORT (and HOST) to a free one`,
      ],
      [
        'METRICS_PORT',
        (port) => ({ METRICS_PORT: String(port) }),
        (port) => `Invalid configuration: METRICS_PORT ${port} on 127.0.0.1 cannot be listened on (EADDRINUSE)`,
      ],
    ])('should say what to do when %s is taken', async (_name, settings, line) => {
      const holder = createServer();
      await new Promise<void>((resolve) => holder.listen(0, '127.0.0.1', resolve));
      const { port } = holder.address() as AddressInfo;
      try {
        const { code, stderr, stdout } = await runUntilExit(env(settings(port)));
        expect(code).toBe(1);
        expect(stderr).toBe(`${line(port)}\n`);
        // Nothing claims it started.
        expect(stdout).not.toMatch(/successfully started|Plant Store 1\.0\.0 on Node/);
      } finally {
        holder.close();
      }
    });

    it('should name the database file it cannot open, in one line', async () => {
      const blocker = join(dir, 'not-a-folder');
      writeFileSync(blocker, '');
      const { code, stderr } = await runUntilExit(env({ DATABASE_URL: `sqlite:${join(blocker, 'plants.db')}` }));
      expect(code).toBe(1);
      expect(stderr).toBe(
        `Invalid configuration: DATABASE_URL points at ${join(blocker, 'plants.db')}, but its folder ${blocker} ` +
          'cannot be created (EEXIST: a part of that path is a file, not a folder)\n',
      );
    });
  });
});
