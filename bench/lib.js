'use strict';
// Small helpers the bench scripts share (run.js, cpu-per-request.js, fastpaths-callgrind.js).
const { createServer } = require('node:net');
const { join, resolve } = require('node:path');

/** A free port on 127.0.0.1. */
function freePort() {
  return new Promise((resolve) => {
    const server = createServer();
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** The median of a list of numbers (the mean of the middle two for an even count). */
function median(values) {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

/** The bench's bearer token (production settings refuse a static token under 32 characters). */
const TOKEN = 'bench-token-0123456789abcdef0123456789';

/** What a server under load runs with: production settings on 127.0.0.1:`port`, request logs off (warn). */
function serverEnv(port) {
  return {
    HOST: '127.0.0.1',
    PORT: String(port),
    AUTH_TOKENS: TOKEN,
    LOG_LEVEL: 'warn',
    LOG_FORMAT: 'json',
    NODE_ENV: 'production',
  };
}

/**
 * Resolves once the server at `url` answers HTTP (any status); rejects if `child` exits first or after
 * `timeoutMs`. It asks every `stepMs`: `bench/run.js` times start-up with it, so its step is short there.
 */
async function untilAnswering(url, child, name, { timeoutMs = 30000, stepMs = 10 } = {}) {
  for (let waited = 0; waited < timeoutMs; waited += stepMs) {
    if (child.exitCode !== null) throw new Error(`${name} exited before answering`);
    if (
      await fetch(url).then(
        () => true,
        () => false,
      )
    )
      return;
    await sleep(stepMs);
  }
  throw new Error(`${name} did not answer within ${timeoutMs / 1000} s`);
}

/**
 * The builds named on a command line: each argument `name=target` (a name of letters, digits, `_`, `.`
 * or `-`), the target a dist folder (its main.js is run) or a script (`.js`, e.g. bench/baseline-server.js).
 * Other arguments, options' values included (`--path /plants?tag=even`, `--env name:VAR=value`), are not builds.
 */
function buildsFromArgs(args) {
  return args
    .filter((arg) => /^[\w.-]+=/.test(arg))
    .map((arg) => {
      const target = arg.slice(arg.indexOf('=') + 1);
      return {
        name: arg.slice(0, arg.indexOf('=')),
        main: target.endsWith('.js') ? resolve(target) : join(resolve(target), 'main.js'),
      };
    });
}

/** Kills `child` (SIGKILL) and resolves once it has exited: its connections and files are closed then. */
function killAndWait(child) {
  const exited = new Promise((done) => (child.exitCode === null ? child.once('exit', done) : done()));
  child.kill('SIGKILL');
  return exited;
}

module.exports = { TOKEN, buildsFromArgs, freePort, killAndWait, median, serverEnv, sleep, untilAnswering };
