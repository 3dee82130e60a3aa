'use strict';
// `npm start` runs this first: it builds only when dist/ is missing or older than a source, so a
// restart with nothing changed starts at once (about 1 s) instead of rebuilding (about 10 s).
const { spawnSync } = require('node:child_process');
const { existsSync, readdirSync, statSync } = require('node:fs');
const { join } = require('node:path');

const INPUTS = ['src', 'tsconfig.json', 'tsconfig.build.json', 'nest-cli.json', 'package-lock.json'];

/** The newest modification time (ms) of `path`, a file or a folder walked whole; 0 when absent. */
function newest(path) {
  if (!existsSync(path)) return 0;
  const stat = statSync(path);
  if (!stat.isDirectory()) return stat.mtimeMs;
  return Math.max(0, ...readdirSync(path).map((name) => newest(join(path, name))));
}

/** Whether `root`'s dist/main.js is missing or older than any of its sources. */
function isStale(root) {
  const built = join(root, 'dist', 'main.js');
  if (!existsSync(built)) return true;
  const builtAt = statSync(built).mtimeMs;
  return INPUTS.some((input) => newest(join(root, input)) > builtAt);
}

module.exports = { isStale };

if (require.main === module) {
  const root = join(__dirname, '..');
  if (!isStale(root)) {
    console.log('dist/ is up to date with src/: starting without a build');
  } else {
    const result = spawnSync('npx', ['nest', 'build'], { cwd: root, stdio: 'inherit' });
    process.exit(result.status ?? 1);
  }
}
