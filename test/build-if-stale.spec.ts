import { mkdirSync, mkdtempSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

// eslint-disable-next-line @typescript-eslint/no-require-imports -- the script npm start runs, as it is
const { isStale } = require('../scripts/build-if-stale.js') as { isStale: (root: string) => boolean };

describe('npm start builds only when the sources changed (scripts/build-if-stale.js)', () => {
  let root: string;
  const touch = (path: string, secondsAgo: number) => {
    mkdirSync(join(root, path, '..'), { recursive: true });
    writeFileSync(join(root, path), '');
    const at = Date.now() / 1000 - secondsAgo;
    utimesSync(join(root, path), at, at);
  };

  beforeEach(() => {
    root = mkdtempSync(join(tmpdir(), 'plant-store-stale-'));
  });
  afterEach(() => rmSync(root, { recursive: true, force: true }));

  it('should build when there is no dist/main.js', () => {
    touch('src/main.ts', 100);
    expect(isStale(root)).toBe(true);
  });

  it('should not build when dist/ is newer than every source', () => {
    touch('src/plants/plant.ts', 100);
    touch('package-lock.json', 100);
    touch('dist/main.js', 10);
    expect(isStale(root)).toBe(false);
  });

  it('should build when a source deep in src/, or the lockfile, changed after the build', () => {
    touch('dist/main.js', 50);
    touch('src/plants/persistence/x.ts', 10);
    expect(isStale(root)).toBe(true);
    touch('src/plants/persistence/x.ts', 100);
    touch('package-lock.json', 5);
    expect(isStale(root)).toBe(true);
  });
});
