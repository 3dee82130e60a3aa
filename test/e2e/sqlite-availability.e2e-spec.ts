import { join } from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import { Database } from '../../src/database/database';
import { eventually } from '../support/eventually';
import { request } from '../support/http';
import { createTestApp, TestApp } from '../support/test-app';

// Another process writing the same file (an overlapping deploy, an operator's sqlite3 shell), played
// by a second connection that holds the write lock.
describe('when another connection holds the SQLite write lock (e2e)', () => {
  let server: TestApp;
  let other: BetterSqlite3.Database;

  beforeAll(async () => {
    server = await createTestApp();
    other = new BetterSqlite3(join(server.dataDir, 'plants.db'));
  });
  afterAll(async () => {
    other.close();
    await server.destroy();
  });

  const call = (method: string, path: string, body?: unknown) => request(`${server.url}${path}`, { method, body });

  it('should answer writes and readiness 503 at once, keep reads and liveness working, and recover', async () => {
    expect((await call('POST', '/plants', { id: 1, name: 'before' })).status).toBe(200);
    other.exec('BEGIN IMMEDIATE');

    // Each write transaction waits up to BUSY_WAIT_MS for the file; the writes of a batch share one.
    const transactions = jest.spyOn(server.app.get(Database), 'transaction');
    const [creates, removed, ready, live, read] = await Promise.all([
      Promise.all(Array.from({ length: 20 }, (_, i) => call('POST', '/plants', { id: 10 + i, name: 'during' }))),
      call('DELETE', '/plants/1'),
      call('GET', '/health/ready'),
      call('GET', '/health/live'),
      call('GET', '/plants/1'),
    ]);
    // One wait of the busy timeout for a batch of writes, never one per write (it was 5 s each, 21 of them):
    // however the requests fell into batches, fewer transactions waited than there were writes.
    const waits = transactions.mock.calls.filter(([action]) => action === 'store a plant').length;
    transactions.mockRestore();
    expect(waits).toBeGreaterThan(0);
    expect(waits).toBeLessThan(21);
    expect(creates.map((result) => result.body)).toEqual(
      Array.from({ length: 20 }, () => ({
        error: 503,
        message: 'The database is unavailable; the plant was not stored, retry shortly',
      })),
    );
    expect(removed.body).toEqual({
      error: 503,
      message: 'The database is unavailable; the plant was not deleted, retry shortly',
    });
    expect(ready.body).toEqual({ error: 503, message: 'Not ready: database is down' });
    expect(live.status).toBe(200);
    expect(read.body).toEqual({ id: 1, name: 'before' });

    other.exec('ROLLBACK');
    expect((await call('POST', '/plants', { id: 10, name: 'after' })).body).toEqual({ name: 'after' });
    expect((await call('DELETE', '/plants/1')).status).toBe(204);
    // The last answer of the database serves readiness for up to a second.
    await eventually(async () => (await call('GET', '/health/ready')).status === 200);
  });
});
