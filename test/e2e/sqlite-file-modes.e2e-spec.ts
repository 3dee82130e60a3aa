import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { request } from '../support/http';
import { createTestApp } from '../support/test-app';

const modeOf = (path: string) => statSync(path).mode & 0o777;

describe('the SQLite file and its folder (e2e)', () => {
  it('should be created readable by the service user only: folder 0700, the file, its -wal and -shm 0600, whatever the umask', async () => {
    const parent = mkdtempSync(join(tmpdir(), 'plant-store-modes-'));
    const folder = join(parent, 'made', 'here');
    const previous = process.umask(0o022);
    try {
      const server = await createTestApp({ DATABASE_URL: `sqlite:${join(folder, 'plants.db')}` }, parent);
      try {
        expect((await request(`${server.url}/plants`, { body: { id: 1, name: 'a' } })).status).toBe(200);
        expect({
          parent: modeOf(join(parent, 'made')),
          folder: modeOf(folder),
          file: modeOf(join(folder, 'plants.db')),
          wal: modeOf(join(folder, 'plants.db-wal')),
          shm: modeOf(join(folder, 'plants.db-shm')),
        }).toEqual({ parent: 0o700, folder: 0o700, file: 0o600, wal: 0o600, shm: 0o600 });
      } finally {
        await server.close();
      }
    } finally {
      process.umask(previous);
      rmSync(parent, { recursive: true, force: true });
    }
  });
});
