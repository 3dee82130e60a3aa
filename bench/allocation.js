'use strict';
// Bytes allocated per request of several builds of the service (or a script such as the baseline),
// by V8's sampling heap profiler with the objects garbage collection freed kept in the profile
// (bench/heap-sampler.js): what a request makes the GC's young generation churn through, which an
// instruction count does not show, and where (the functions allocating most). Like callgrind's
// counts, a property of the code rather than of the machine's load: steady on a noisy machine.
//
//   node bench/allocation.js [--requests 20000] [--connections 32] [--only get] [--top 12] name=path/to/dist|script.js ...
//   node bench/allocation.js --async-resources …: async resources (promises, ticks…) made per request instead,
//     by type and by whom (bench/async-resource-counter.js: what tracing's AsyncLocalStorage runs a hook for on Node 20)
//   node bench/allocation.js --postgres …: on PostgreSQL (BENCH_DATABASE_URL, a fresh schema per build) instead of SQLite
//
// Each build: started with production settings on a fresh store (seeded for the reads), warmed with
// as many requests as are measured, then sampled over --requests requests. The server's CPU time per
// measured request is printed too (all its threads, sampler included: compare builds, not absolutes).
const { spawn } = require('node:child_process');
const { existsSync, mkdtempSync, readFileSync, rmSync } = require('node:fs');
const os = require('node:os');
const { join } = require('node:path');
const autocannon = require('autocannon');
const { TOKEN, buildsFromArgs, freePort, killAndWait, serverEnv, sleep, untilAnswering } = require('./lib');
const { cpuNs } = require('./cpu-time');
const { NODE, SERVICE_FLAGS, freshStore } = require('./node');

const args = process.argv.slice(2);
const option = (name, fallback) => (args.includes(name) ? args[args.indexOf(name) + 1] : fallback);
const REQUESTS = Number(option('--requests', 20000));
const CONNECTIONS = Number(option('--connections', 32));
const ONLY = option('--only', undefined);
const TOP = Number(option('--top', 12));
const ASYNC_RESOURCES = args.includes('--async-resources');
const STORE = args.includes('--postgres') ? 'postgres' : 'sqlite';
const STORE_LABEL = STORE === 'postgres' ? 'PostgreSQL' : 'SQLite';
if (STORE === 'postgres' && !process.env.BENCH_DATABASE_URL) throw new Error('--postgres needs BENCH_DATABASE_URL');
const BUILDS = buildsFromArgs(args);
if (BUILDS.length === 0)
  throw new Error('give at least one build: name=path/to/dist (or name=bench/baseline-server.js)');

const SEEDED = 100_000;
const SCENARIOS = [
  { name: `get by id (${STORE_LABEL})`, seed: SEEDED, path: '/plants/4242' },
  { name: `list first page (${STORE_LABEL})`, seed: SEEDED, path: '/plants' },
  { name: `create (${STORE_LABEL})`, path: '/plants', body: (id) => ({ id, name: 'Monstera', tag: 'tropical' }) },
].filter(({ name }) => ONLY === undefined || name.includes(ONLY));

/** One build under one scenario, on a fresh store and folder, both removed after it whatever happens. */
async function measure(scenario, build) {
  const dir = mkdtempSync(join(os.tmpdir(), 'plant-store-allocation-'));
  try {
    const store = await freshStore(STORE);
    try {
      return await measureOn(scenario, build, store, join(dir, 'heap.json'));
    } finally {
      await store.drop();
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

async function measureOn(scenario, build, store, profileFile) {
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const sampler = join(__dirname, ASYNC_RESOURCES ? 'async-resource-counter.js' : 'heap-sampler.js');
  const child = spawn(NODE, [...SERVICE_FLAGS, '--require', sampler, build.main], {
    env: {
      PATH: process.env.PATH,
      ...serverEnv(port),
      ...store.env,
      SAMPLER_OUT: profileFile,
    },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  try {
    await untilAnswering(url, child, build.name);
    if (scenario.seed) await store.seed(scenario.seed);
    let nextId = 1;
    const load = () =>
      autocannon({
        url: `${url}${scenario.path}`,
        connections: CONNECTIONS,
        amount: REQUESTS,
        headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
        requests: [
          scenario.body
            ? { method: 'POST', setupRequest: (req) => ({ ...req, body: JSON.stringify(scenario.body(nextId++)) }) }
            : { method: 'GET' },
        ],
      });
    await load();
    child.kill('SIGUSR2');
    await sleep(200);
    const cpuBefore = cpuNs(child.pid);
    const result = await load();
    const cpuUs = (cpuNs(child.pid) - cpuBefore) / 1000 / REQUESTS;
    child.kill('SIGUSR2');
    for (let waited = 0; !existsSync(profileFile); waited += 50) {
      if (waited > 30000) throw new Error(`${build.name}: no heap profile`);
      await sleep(50);
    }
    const answered = result['2xx'];
    if (answered !== REQUESTS)
      throw new Error(`${build.name} ${scenario.name}: ${answered} of ${REQUESTS} answered 2xx`);
    const profile = JSON.parse(readFileSync(profileFile, 'utf8'));
    return { cpuUs, ...(ASYNC_RESOURCES ? asyncResourcesPerRequest(profile, answered) : summarize(profile, answered)) };
  } finally {
    // Gone before its store is dropped (a PostgreSQL schema's DROP would wait for its connections).
    await killAndWait(child);
  }
}

/** Bytes per request in all, and by allocating function (name, file or package, line). */
function summarize(profile, requests) {
  const byFunction = new Map();
  let total = 0;
  const visit = (node) => {
    if (node.selfSize > 0) {
      const { functionName, url, lineNumber } = node.callFrame;
      const where = url
        .replace(/^.*node_modules\//, '')
        .replace(/^file:\/\//, '')
        .replace(process.cwd(), '.');
      const key = `${functionName || '(anonymous)'} ${where}:${lineNumber + 1}`;
      byFunction.set(key, (byFunction.get(key) ?? 0) + node.selfSize);
      total += node.selfSize;
    }
    node.children.forEach(visit);
  };
  visit(profile.head);
  const top = [...byFunction].sort((a, b) => b[1] - a[1]).slice(0, TOP);
  return { bytes: total / requests, top: top.map(([where, bytes]) => ({ where, bytes: bytes / requests })) };
}

/** Async resources made per request in all, by type, and by their creators (the two nearest frames). */
function asyncResourcesPerRequest({ total, types, creators }, requests) {
  return {
    count: total / requests,
    types: types.map(([type, count]) => `${type} ${(count / requests).toFixed(1)}`).join(', '),
    top: creators.slice(0, TOP).map(([where, count]) => ({ where, count: count / requests })),
  };
}

async function main() {
  for (const scenario of SCENARIOS) {
    for (const build of BUILDS) {
      if (ASYNC_RESOURCES) {
        const { count, types, top } = await measure(scenario, build);
        console.log(`${scenario.name} ${build.name}: ${count.toFixed(1)} async resources made per request (${types})`);
        for (const { where, count: c } of top) console.log(`  ${c.toFixed(2).padStart(6)}  ${where}`);
        continue;
      }
      const { bytes, top, cpuUs } = await measure(scenario, build);
      console.log(
        `${scenario.name} ${build.name}: ${(bytes / 1024).toFixed(1)} KiB allocated per request, ${cpuUs.toFixed(0)} µs CPU`,
      );
      for (const { where, bytes: b } of top) console.log(`  ${b.toFixed(0).padStart(6)} B  ${where}`);
    }
  }
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
