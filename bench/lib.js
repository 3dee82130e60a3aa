'use strict';
// Small helpers the bench scripts share (bench/run.js, fastpaths.js, fastpaths-callgrind.js).
const { createServer } = require('node:net');

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

module.exports = { TOKEN, freePort, median, serverEnv, sleep, untilAnswering };
