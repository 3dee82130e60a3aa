import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { request } from '../support/http';
import { ServiceProcess, startService } from '../support/service-process';

// Which requests get a line (LOG_REQUESTS, LOG_SLOW_MS), read from the service's stdout after SIGTERM
// has flushed it: a 200, a 404 and a 401, each with its own X-Request-Id.
describe('the request log of node dist/main.js (e2e)', () => {
  let dir: string;
  let service: ServiceProcess | undefined;

  beforeEach(() => (dir = mkdtempSync(join(tmpdir(), 'plant-store-request-log-'))));
  afterEach(async () => {
    await service?.stop('SIGKILL');
    service = undefined;
    rmSync(dir, { recursive: true, force: true });
  });

  /** The request lines written by a service run with `extra`, after a 200, a 404 and a 401. */
  async function requestLines(extra: NodeJS.ProcessEnv): Promise<Record<string, unknown>[]> {
    service = await startService({
      DATABASE_URL: `sqlite:${join(dir, 'plants.db')}`,
      DATA_DIR: dir,
      AUTH_TOKENS: 'process-token',
      ...extra,
    });
    const send = (id: string, path: string, token: string) =>
      request(`${service!.url}${path}`, { method: 'GET', auth: `Bearer ${token}`, headers: { 'x-request-id': id } });
    expect(
      (await request(`${service.url}/plants`, { body: { id: 1, name: 'Fern' }, auth: 'Bearer process-token' })).status,
    ).toBe(200);
    expect((await send('ok', '/plants/1', 'process-token')).status).toBe(200);
    expect((await send('missing', '/plants/2', 'process-token')).status).toBe(404);
    expect((await send('refused', '/plants/1', 'wrong-token')).status).toBe(401);
    expect(await service.stop('SIGTERM')).toBe(0);
    return service.logs().filter((line) => ['ok', 'missing', 'refused'].includes(requestId(line)));
  }

  const requestId = (line: Record<string, unknown>) => String((line.req as { id?: unknown } | undefined)?.id);
  const summary = () => service!.logs().find((line) => String(line.msg).startsWith('Plant Store '))?.msg;

  describe('when LOG_REQUESTS is unset (all)', () => {
    it('should write one line a request, at info for a 2xx and a 4xx, with the same fields in the same order', async () => {
      const lines = await requestLines({});
      expect(lines.map(requestId)).toEqual(['ok', 'missing', 'refused']);
      expect(lines.map(({ level }) => level)).toEqual([30, 30, 30]);
      expect(lines[0]).toEqual({
        level: 30,
        time: expect.any(Number),
        pid: service!.child.pid,
        hostname: expect.any(String),
        req: { id: 'ok', method: 'GET', url: '/plants/1' },
        route: '/plants/:id',
        res: { statusCode: 200 },
        responseTime: expect.any(Number),
        msg: 'request completed',
      });
      expect(Object.keys(lines[0])).toEqual([
        'level',
        'time',
        'pid',
        'hostname',
        'req',
        'route',
        'res',
        'responseTime',
        'msg',
      ]);
      expect(summary()).toMatch(/; request log: every request$/);
    });
  });

  describe('when LOG_REQUESTS=failures', () => {
    it('should write the 4xx lines only, as long as the answers take less than LOG_SLOW_MS (1000 by default)', async () => {
      const lines = await requestLines({ LOG_REQUESTS: 'failures' });
      expect(
        lines.map((line) => [requestId(line), line.level, (line.res as { statusCode: number }).statusCode]),
      ).toEqual([
        ['missing', 30, 404],
        ['refused', 30, 401],
      ]);
      expect(summary()).toMatch(/; request log: 4xx, 5xx and requests slower than 1000 ms \(LOG_REQUESTS=failures\)$/);
    });

    it('should also write the line of a 200 slower than LOG_SLOW_MS', async () => {
      const lines = await requestLines({ LOG_REQUESTS: 'failures', LOG_SLOW_MS: '0' });
      expect(lines.map(requestId)).toEqual(['ok', 'missing', 'refused']);
    });
  });

  describe('when LOG_REQUESTS=off', () => {
    it('should write no request line, and say so at start-up', async () => {
      expect(await requestLines({ LOG_REQUESTS: 'off' })).toEqual([]);
      expect(summary()).toMatch(/; request log: off \(LOG_REQUESTS=off\)$/);
    });
  });
});
