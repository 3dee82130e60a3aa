'use strict';
// The failed-authentication scenario of `npm run bench` (`--only auth-failures`): many client
// addresses failing against one instance (CONTRACT.md, "Authentication": counting costs the same, in
// work and memory, at any number of addresses). It prints its figures; they are not saved.
//
// The addresses come from X-Forwarded-For: the service trusts it from 127.0.0.1 (TRUST_PROXY), so one
// kept connection speaks for any number of clients, as a reverse proxy's does. (Binding distinct
// 127.x.y.z source addresses instead would need a connection per address: the bench would measure
// the kernel's and Fastify's connection set-up, not the count.) They are 198.18.0.0/15's, the
// benchmarking range, one per failing request.
//
// Each round, on fresh SQLite stores of SEEDED plants:
//   reads: an authenticated client's `GET /plants/{id}`, sent at a fixed rate (an open loop: latency
//     runs from the moment each request was due, so a stall is not hidden), alone and then while
//     STRANGERS distinct addresses send one failing `GET /plants/1` each (a wrong bearer token, 401;
//     from a child process), in one instance. The p99 with the strangers must stay within 2x of the p99 without.
//   cpu: the service's CPU time per failing request, from one address and from distinct addresses
//     (a fresh instance each): the first half of STRANGERS requests unmeasured, the second measured,
//     so the distinct addresses are counted while the service already holds STRANGERS / 2 to STRANGERS.
const { fork } = require('node:child_process');
const { once } = require('node:events');
const { Agent, get } = require('node:http');
const { performance } = require('node:perf_hooks');
const autocannon = require('autocannon');
const { cpuNs } = require('./cpu-time');

const STRANGERS = 20_000;
const SEEDED = 100_000;
const READ_RATE = 500; // authenticated reads a second
const STRANGER_RATE = 2_000; // failing requests a second: STRANGERS in 10 s
const READ_SECONDS = STRANGERS / STRANGER_RATE;
const ENV = { TRUST_PROXY: '127.0.0.1' };

/** The n-th address of 198.18.0.0/15 (n < 131,072). */
const stranger = (n) => `198.${18 + (n >> 16)}.${(n >> 8) & 255}.${n & 255}`;

/** `amount` failing requests, the n-th from `from(n)`; `rate` a second, or as fast as they are answered. */
async function fail(url, amount, from, rate) {
  let n = 0;
  const result = await autocannon({
    url: `${url}/plants/1`,
    method: 'GET',
    connections: 16,
    amount,
    ...(rate ? { overallRate: rate } : {}),
    headers: { authorization: 'Bearer not-a-valid-token' },
    requests: [{ setupRequest: (req) => ({ ...req, headers: { ...req.headers, 'x-forwarded-for': from(n++) } }) }],
  });
  const answered = result.statusCodeStats['401']?.count ?? 0;
  if (answered !== amount || result.errors > 0) {
    throw new Error(`failing requests: ${JSON.stringify(result.statusCodeStats)}, ${result.errors} errors`);
  }
}

/**
 * `fail` with the strangers' addresses at STRANGER_RATE, in a process of its own: in this one, making
 * 2,000 requests a second would delay the reads' own timing.
 */
async function failElsewhere(url) {
  const child = fork(module.filename, ['--strangers', url], { stdio: 'inherit' });
  const [code] = await once(child, 'exit');
  if (code !== 0) throw new Error(`the strangers' process exited with ${code}`);
}

/**
 * Authenticated reads of spread ids at `rate` a second for `seconds`, each timed from when it was due;
 * resolves with their p50 and p99 in ms once all are answered.
 */
function readAtRate(url, token, rate, seconds) {
  const agent = new Agent({ keepAlive: true, maxSockets: 64 });
  const latencies = [];
  let sent = 0;
  let answered = 0;
  let failed = 0;
  const total = rate * seconds;
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const done = () => {
      agent.destroy();
      if (failed > 0) return reject(new Error(`${failed} of ${total} authenticated reads failed`));
      latencies.sort((a, b) => a - b);
      const at = (q) => latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))];
      resolve({ p50Ms: at(0.5), p99Ms: at(0.99), reads: total });
    };
    const one = (n, dueAt) => {
      const request = get(
        `${url}/plants/${((n * 7919) % SEEDED) + 1}`,
        { agent, headers: { authorization: `Bearer ${token}` } },
        (response) => {
          response.resume();
          response.on('end', () => {
            if (response.statusCode === 200) latencies.push(performance.now() - dueAt);
            else failed++;
            if (++answered === total) done();
          });
        },
      );
      request.on('error', () => {
        failed++;
        if (++answered === total) done();
      });
    };
    const tick = () => {
      const due = Math.min(total, Math.floor(((performance.now() - started) / 1000) * rate));
      for (; sent < due; sent++) one(sent, started + (sent * 1000) / rate);
      if (sent < total) setTimeout(tick, 1);
    };
    tick();
  });
}

/** One round: reads alone then with the strangers in one instance; CPU per failing request in two more. */
async function round({ start, stop, freshStore, token }) {
  const withServer = async (run) => {
    const store = await freshStore('sqlite');
    const server = await start('service', { ...store.env, ...ENV });
    try {
      await store.seed(SEEDED);
      return await run(server);
    } finally {
      await stop(server);
      await store.drop();
    }
  };
  const reads = await withServer(async ({ url, child }) => {
    // Warm-up: the read path, and the failing path from one address (one entry in the count).
    await readAtRate(url, token, READ_RATE, 3);
    await fail(url, 2_000, () => '198.19.255.255');
    const before = cpuNs(child.pid);
    const alone = await readAtRate(url, token, READ_RATE, READ_SECONDS);
    const readCpuUs = (cpuNs(child.pid) - before) / 1000 / alone.reads;
    const [withStrangers] = await Promise.all([readAtRate(url, token, READ_RATE, READ_SECONDS), failElsewhere(url)]);
    return { alone, withStrangers, readCpuUs };
  });
  const cpuPerFailure = async (from) =>
    withServer(async ({ url, child }) => {
      await fail(url, 2_000, () => '198.19.255.255');
      await fail(url, STRANGERS / 2, from);
      const before = cpuNs(child.pid);
      await fail(url, STRANGERS / 2, (n) => from(STRANGERS / 2 + n));
      return (cpuNs(child.pid) - before) / 1000 / (STRANGERS / 2);
    });
  return {
    ...reads,
    failureCpuUs: { oneAddress: await cpuPerFailure(() => '198.18.0.1'), distinct: await cpuPerFailure(stranger) },
  };
}

async function runAuthFailuresBench(helpers) {
  const { median, rounds } = helpers;
  const results = [];
  for (let index = 1; index <= rounds; index++) {
    const result = await round(helpers);
    results.push(result);
    console.log(
      `auth failures round ${index}: reads p99 ${result.alone.p99Ms.toFixed(2)} ms alone, ` +
        `${result.withStrangers.p99Ms.toFixed(2)} ms with ${STRANGERS} failing addresses; CPU a failing request ` +
        `${result.failureCpuUs.oneAddress.toFixed(0)} µs from one address, ${result.failureCpuUs.distinct.toFixed(0)} µs ` +
        `from distinct ones; CPU a read ${result.readCpuUs.toFixed(0)} µs`,
    );
  }
  const summary = {
    strangers: STRANGERS,
    readRate: READ_RATE,
    strangerRate: STRANGER_RATE,
    p50Ms: {
      alone: median(results.map((r) => r.alone.p50Ms)),
      withStrangers: median(results.map((r) => r.withStrangers.p50Ms)),
    },
    p99Ms: {
      alone: median(results.map((r) => r.alone.p99Ms)),
      withStrangers: median(results.map((r) => r.withStrangers.p99Ms)),
    },
    p99Ratio: median(results.map((r) => r.withStrangers.p99Ms / r.alone.p99Ms)),
    failureCpuUs: {
      oneAddress: median(results.map((r) => r.failureCpuUs.oneAddress)),
      distinct: median(results.map((r) => r.failureCpuUs.distinct)),
    },
    readCpuUs: median(results.map((r) => r.readCpuUs)),
    rounds: results,
  };
  summary.pass = summary.p99Ratio <= 2;
  console.log(
    `\nAuthenticated reads (${READ_RATE}/s), median of ${rounds} rounds: p99 ${summary.p99Ms.alone.toFixed(2)} ms alone, ` +
      `${summary.p99Ms.withStrangers.toFixed(2)} ms with ${STRANGERS} failing addresses (${STRANGER_RATE}/s): ` +
      `${summary.p99Ratio.toFixed(2)}x, ${summary.pass ? 'within' : 'NOT within'} 2x. CPU a failing request: ` +
      `${summary.failureCpuUs.oneAddress.toFixed(0)} µs from one address, ${summary.failureCpuUs.distinct.toFixed(0)} µs ` +
      `from distinct ones (${STRANGERS / 2}-${STRANGERS} held); CPU a read ${summary.readCpuUs.toFixed(0)} µs`,
  );
  return summary;
}

if (require.main === module && process.argv[2] === '--strangers') {
  fail(process.argv[3], STRANGERS, stranger, STRANGER_RATE).catch((error) => {
    console.error(error);
    process.exit(1);
  });
}

module.exports = { runAuthFailuresBench };
