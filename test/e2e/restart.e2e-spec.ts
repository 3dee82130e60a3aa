import { join } from 'node:path';
import Database from 'better-sqlite3';
import { request } from '../support/http';
import { createTestApp, TestApp } from '../support/test-app';

describe('Plant Store over a restart and a storage failure (e2e)', () => {
  let server: TestApp;
  afterEach(() => server.destroy());

  it('should still have the plant after the app is closed and opened again on the same file', async () => {
    server = await createTestApp();
    const plant = '{"id":9007199254740993,"name":"Persistent","tag":"kept"}';
    expect((await request(`${server.url}/plants`, { body: plant })).status).toBe(200);
    await server.close();

    server = await createTestApp({}, server.dataDir);
    const conflict = await request(`${server.url}/plants`, { body: '{"id":9007199254740993,"name":"Other"}' });
    expect(conflict.body).toEqual({
      error: 409,
      message: 'A plant with id 9007199254740993 already exists with a different name or tag',
    });
    const replay = await request(`${server.url}/plants`, { body: plant });
    expect(replay.body).toEqual({ name: 'Persistent', tag: 'kept' });
  });

  it('should answer a storage failure with a generic 500 and put the detail in the log only', async () => {
    server = await createTestApp();
    const db = new Database(join(server.dataDir, 'plants.db'));
    db.exec('DROP TABLE plants');
    db.close();

    const res = await request(`${server.url}/plants`, { body: { id: 1, name: 'Doomed' } });
    expect(res.status).toBe(500);
    expect(res.body).toEqual({ error: 500, message: 'Internal server error' });
    const logged = server.logs.join('\n');
    expect(logged).toContain('StorageError: SQLite failed to store a plant');
    expect(logged).toContain('no such table: plants');
  });

  it('should answer reads and deletes that fail in storage with the same generic 500', async () => {
    server = await createTestApp();
    const db = new Database(join(server.dataDir, 'plants.db'));
    db.exec('DROP TABLE plants');
    db.close();
    for (const [method, path] of [
      ['GET', '/plants'],
      ['GET', '/plants/1'],
      ['DELETE', '/plants/1'],
    ]) {
      const res = await request(`${server.url}${path}`, { method });
      expect(res.body).toEqual({ error: 500, message: 'Internal server error' });
    }
    const logged = server.logs.join('\n');
    expect(logged).toContain('StorageError: SQLite failed to read plants');
    expect(logged).toContain('StorageError: SQLite failed to delete a plant');
  });
});
