'use strict';
// Service CPU time per request of several builds of the service (creates, 400s, gets by id), under
// the same autocannon load, alternating the builds in every round (the order rotates each round). Made to decide whether a
// hand-written fast path still pays: build a variant with it off, copy each build's `dist` to a
// folder inside the repository (so `node_modules` resolves), and compare.
//
//   node bench/fastpaths.js [--rounds 6] [--duration 4] [--connections 32] [--only 400] name=path/to/dist ...
//   node bench/fastpaths.js --interleave --rounds 20 --duration 1 …: the builds run side by side (below)
//
// CPU time is the sum of /proc/<pid>/task/*/schedstat (nanoseconds on a CPU, every thread of the
// service process), read after the warm-up and at the end of the measured load, divided by the
// requests answered in between. On a shared, loaded machine this is far steadier than req/s: the
// process is charged for the work it does, not for the time it waits for a core.
const { spawn } = require('node:child_process');
const { mkdtempSync, rmSync } = require('node:fs');
const os = require('node:os');
const { join } = require('node:path');
const { cpuNs } = require('./cpu-time');
const { NODE, SERVICE_FLAGS, seedSqlite } = require('./node');
const autocannon = require('autocannon');
const { TOKEN, buildsFromArgs, freePort, median, serverEnv, untilAnswering } = require('./lib');

const args = process.argv.slice(2);
const option = (name, fallback) => (args.includes(name) ? args[args.indexOf(name) + 1] : fallback);
const ROUNDS = Number(option('--rounds', 6));
const DURATION = Number(option('--duration', 4));
const CONNECTIONS = Number(option('--connections', 32));
const ONLY = option('--only', undefined);
const INTERLEAVE = args.includes('--interleave');
const BUILDS = buildsFromArgs(args);
if (BUILDS.length < 2) throw new Error('give at least two builds: name=path/to/dist');

const SEEDED = 100_000;
const SCENARIOS = [
  { name: 'create (SQLite)', status: 200, body: (id) => ({ id, name: 'Monstera', tag: 'tropical' }) },
  { name: '400 invalid body', status: 400, body: (id) => ({ id: String(id), name: 5 }) },
  // Reads: a different id each time over SEEDED plants (stored with one statement before the warm-up).
  { name: 'get by id (SQLite)', status: 200, seed: SEEDED, path: (n) => `/plants/${((n * 7919) % SEEDED) + 1}` },
].filter(({ name }) => ONLY === undefined || name.includes(ONLY));

async function start(build, dir) {
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const child = spawn(NODE, [...SERVICE_FLAGS, build.main], {
    env: {
      PATH: process.env.PATH,
      ...serverEnv(port),
      DATABASE_URL: `sqlite:${join(dir, 'plants.db')}`,
      DATA_DIR: dir,
    },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  await untilAnswering(url, child, build.name);
  return { child, url };
}

function stop({ child }) {
  return new Promise((done) => {
    if (child.exitCode !== null) return done();
    child.once('exit', done);
    child.kill('SIGTERM');
  });
}

/** A build started for a scenario (its own store, seeded for reads): `sample(duration)` measures a load on it. */
async function open(scenario, build) {
  const dir = mkdtempSync(join(os.tmpdir(), 'plant-store-fastpaths-'));
  const server = await start(build, dir);
  if (scenario.seed) seedSqlite(join(dir, 'plants.db'), scenario.seed);
  let nextId = 1000;
  const load = (duration) =>
    autocannon({
      url: `${server.url}/plants`,
      connections: CONNECTIONS,
      duration,
      headers: { 'content-type': 'application/json', authorization: `Bearer ${TOKEN}` },
      requests: [
        scenario.path
          ? { method: 'GET', setupRequest: (req) => ({ ...req, path: scenario.path(nextId++) }) }
          : { method: 'POST', setupRequest: (req) => ({ ...req, body: JSON.stringify(scenario.body(nextId++)) }) },
      ],
    });
  const sample = async (duration) => {
    const before = cpuNs(server.child.pid);
    const result = await load(duration);
    const cpu = cpuNs(server.child.pid) - before;
    const answered = result.statusCodeStats[`${scenario.status}`]?.count ?? 0;
    if (result.errors > 0 || Object.keys(result.statusCodeStats).some((s) => Number(s) !== scenario.status)) {
      throw new Error(`${build.name} ${scenario.name}: statuses ${JSON.stringify(result.statusCodeStats)}`);
    }
    return { usPerRequest: cpu / 1000 / answered, rps: answered / duration, load1: os.loadavg()[0] };
  };
  const close = async () => {
    await stop(server);
    rmSync(dir, { recursive: true, force: true });
  };
  return { load, sample, close };
}

/** One build's measurement in a fresh process: a second's warm-up, then DURATION seconds. */
async function measure(scenario, build) {
  const opened = await open(scenario, build);
  try {
    await opened.load(1);
    return await opened.sample(DURATION);
  } finally {
    await opened.close();
  }
}

const record = (results, scenario, build, round, m) => {
  ((results[scenario.name] ??= {})[build.name] ??= []).push(m);
  console.log(
    `round ${round + 1} ${scenario.name} ${build.name}: ${m.usPerRequest.toFixed(1)} µs CPU/request, ` +
      `${m.rps.toFixed(0)} req/s, load ${m.load1.toFixed(2)}`,
  );
};

/**
 * --interleave: every build runs at once, each round loads each of them in turn for DURATION
 * seconds (make it short: 1), so a round's pair is measured seconds apart on the same processes,
 * whatever the machine's speed does between rounds.
 */
async function interleaved(scenario, results) {
  const opened = [];
  try {
    for (const build of BUILDS) opened.push(await open(scenario, build));
    for (const build of opened) await build.load(2);
    for (let round = 0; round < ROUNDS; round++) {
      for (let i = 0; i < BUILDS.length; i++) {
        const at = (i + round) % BUILDS.length;
        record(results, scenario, BUILDS[at], round, await opened[at].sample(DURATION));
      }
    }
  } finally {
    for (const build of opened) await build.close();
  }
}

async function main() {
  const results = {};
  if (INTERLEAVE) {
    for (const scenario of SCENARIOS) await interleaved(scenario, results);
  } else {
    for (let round = 0; round < ROUNDS; round++) {
      for (const scenario of SCENARIOS) {
        const order = BUILDS.map((_, i) => BUILDS[(i + round) % BUILDS.length]);
        for (const build of order) record(results, scenario, build, round, await measure(scenario, build));
      }
    }
  }
  const [reference] = BUILDS;
  for (const [scenario, byBuild] of Object.entries(results)) {
    console.log(`\n${scenario}`);
    for (const { name } of BUILDS) {
      const us = byBuild[name].map((m) => m.usPerRequest);
      const paired = us.map((value, i) => value / byBuild[reference.name][i].usPerRequest);
      console.log(
        `  ${name}: median ${median(us).toFixed(1)} µs (${Math.min(...us).toFixed(1)}–${Math.max(...us).toFixed(1)}), ` +
          `per-round ratio to ${reference.name} median ${median(paired).toFixed(3)} ` +
          `(${Math.min(...paired).toFixed(3)}–${Math.max(...paired).toFixed(3)})`,
      );
    }
  }
  console.log(`\n${JSON.stringify(results)}`);
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
