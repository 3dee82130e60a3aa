'use strict';
// The failed-authentication scenario of `npm run bench` (`--only auth-failures`, bench/README.md).
// The addresses come from X-Forwarded-For (TRUST_PROXY trusts 127.0.0.1), so one kept connection
// speaks for any number of clients, as a reverse proxy's does: binding distinct 127.x.y.z source
// addresses would measure the kernel's connection set-up, not the count.
const { fork } = require('node:child_process');
const { once } = require('node:events');
const { Agent, get } = require('node:http');
const { performance } = require('node:perf_hooks');
const autocannon = require('autocannon');
const { cpuNs, medians, percentile, printSummary, spread } = require('./lib');

const STRANGERS = 20_000;
const SEEDED = 100_000;
const READ_RATE = 500; // authenticated reads a second
// Failing requests a second: STRANGERS in 10 s; BENCH_STRANGER_RATE sets another rate (the reads last as long).
const STRANGER_RATE = Number(process.env.BENCH_STRANGER_RATE ?? 2_000);
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
 * `fail` STRANGERS times at STRANGER_RATE, in a process of its own (in this one, making 2,000 requests
 * a second would delay the reads' own timing): from as many addresses (`distinct`), or, as the
 * control, all from one (`one`), so the two differ in the number of addresses alone.
 */
async function failElsewhere(url, addresses) {
  const child = fork(module.filename, ['--strangers', url, addresses], { stdio: 'inherit' });
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
  const total = rate * seconds;
  const started = performance.now();
  let sent = 0;
  let answered = 0;
  return new Promise((resolve, reject) => {
    const settled = (latency) => {
      if (latency !== undefined) latencies.push(latency);
      if (++answered < total) return;
      agent.destroy();
      const failed = total - latencies.length;
      if (failed > 0) return reject(new Error(`${failed} of ${total} authenticated reads failed`));
      latencies.sort((a, b) => a - b);
      resolve({ p50Ms: percentile(latencies, 50), p99Ms: percentile(latencies, 99), reads: total });
    };
    const one = (n, dueAt) => {
      const headers = { authorization: `Bearer ${token}` };
      get(`${url}/plants/${spread(n, SEEDED)}`, { agent, headers }, (response) => {
        response.resume();
        response.on('end', () => settled(response.statusCode === 200 ? performance.now() - dueAt : undefined));
      }).on('error', () => settled(undefined));
    };
    const tick = () => {
      const due = Math.min(total, Math.floor(((performance.now() - started) / 1000) * rate));
      for (; sent < due; sent++) one(sent, started + (sent * 1000) / rate);
      if (sent < total) setTimeout(tick, 1);
    };
    tick();
  });
}

/**
 * One round, in one instance: reads alone, then under the strangers and under the same failing load
 * from one address; CPU per failing request in two more instances.
 */
async function round({ start, stop, freshStore, token }, index) {
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
    const before = cpuNs(child.pid).all;
    const alone = await readAtRate(url, token, READ_RATE, READ_SECONDS);
    const readCpuUs = (cpuNs(child.pid).all - before) / 1000 / alone.reads;
    const readsUnder = async (addresses) =>
      (await Promise.all([readAtRate(url, token, READ_RATE, READ_SECONDS), failElsewhere(url, addresses)]))[0];
    // The control first in every other round, so neither load always meets the warmer service.
    const under = {};
    for (const addresses of index % 2 === 0 ? ['one', 'distinct'] : ['distinct', 'one']) {
      under[addresses] = await readsUnder(addresses);
    }
    return { alone, withStrangers: under.distinct, withOneAddress: under.one, readCpuUs };
  });
  const cpuPerFailure = async (from) =>
    withServer(async ({ url, child }) => {
      await fail(url, 2_000, () => '198.19.255.255');
      await fail(url, STRANGERS / 2, from);
      const before = cpuNs(child.pid).all;
      await fail(url, STRANGERS / 2, (n) => from(STRANGERS / 2 + n));
      return (cpuNs(child.pid).all - before) / 1000 / (STRANGERS / 2);
    });
  return {
    ...reads,
    failureCpuUs: { oneAddress: await cpuPerFailure(() => '198.18.0.1'), distinct: await cpuPerFailure(stranger) },
  };
}

async function runAuthFailuresBench(helpers) {
  const rounds = [];
  for (let index = 1; index <= helpers.rounds; index++) {
    const result = await round(helpers, index);
    // What the strangers add to the reads' p99; and what their number adds, the rate being the same
    // (about 1 when counting is flat).
    result.p99Ratio = result.withStrangers.p99Ms / result.alone.p99Ms;
    result.p99DistinctToOne = result.withStrangers.p99Ms / result.withOneAddress.p99Ms;
    rounds.push(result);
    console.log(
      `auth failures round ${index}: reads p99 ${result.alone.p99Ms.toFixed(2)} ms alone, ` +
        `${result.withStrangers.p99Ms.toFixed(2)} ms with ${STRANGERS} failing addresses, ` +
        `${result.withOneAddress.p99Ms.toFixed(2)} ms with the same load from one`,
    );
  }
  const summary = { strangers: STRANGERS, readRate: READ_RATE, strangerRate: STRANGER_RATE, ...medians(rounds) };
  summary.pass = summary.p99Ratio <= 2;
  printSummary(
    `auth failures, medians of ${rounds.length} rounds: the p99 with strangers ${summary.pass ? 'within' : 'NOT within'} 2× alone`,
    summary,
  );
  return { ...summary, rounds };
}

if (require.main === module && process.argv[2] === '--strangers') {
  const from = process.argv[4] === 'one' ? () => '198.19.255.254' : stranger;
  fail(process.argv[3], STRANGERS, from, STRANGER_RATE).catch((error) => {
    console.error(error);
    process.exit(1);
  });
}

module.exports = { runAuthFailuresBench };
