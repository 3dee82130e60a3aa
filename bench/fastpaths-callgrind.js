'use strict';
// Instructions per request of several builds of the service, counted by valgrind's callgrind: the
// same count whatever else the machine is doing, which a shared, loaded machine cannot give in
// time. Each build runs under callgrind with instrumentation off; after a warm-up, it is turned on
// for a fixed number of requests, then off. Counts user-space instructions of the whole service
// process (not the kernel's work for its sockets and its fsyncs); the instructions of V8's compilers
// in the window are reported apart, and the comparison is made without them.
//
// What the process does on its own meanwhile (the webhook dispatcher's poll, Node's connection
// checks: timers, charged by the second) would be charged to the requests, and under valgrind a
// request takes ~40 ms: so an idle window as long as the measured one follows it, and its count is
// subtracted (reported as "idle").
//
// The read scenarios first store SEEDED plants (before the warm-up, so outside the counted window).
// A build may also be a script (name=bench/baseline-server.js), run with the same environment: the
// baseline, whose count shows what the service spends beyond it.
//
//   node bench/fastpaths-callgrind.js [--requests 1000] [--warmup 1500] [--only 400] [--keep dir] [--hash-seed 1] [--simulate] name=path/to/dist ...
//
// --env name:VAR=value (repeatable) runs that build with VAR set, `{sink}` in the value being the
// address of an OTLP/HTTP sink this script runs: the same dist under several names compares tracing
// off and on, e.g. `--only get off=dist all=dist --env all:OTEL_EXPORTER_OTLP_ENDPOINT={sink}`. Under
// valgrind a request takes ~40 ms, so the span processor's timed exports carry a few spans each and
// their fixed cost lands on a few requests: add `OTEL_BSP_SCHEDULE_DELAY=600000` and
// `OTEL_BSP_MAX_EXPORT_BATCH_SIZE=16384` to count the spans' making without their export.
const { execFileSync, spawn } = require('node:child_process');
const { createServer: createHttpServer } = require('node:http');
const { copyFileSync, mkdtempSync, readFileSync, rmSync } = require('node:fs');
const os = require('node:os');
const { join, resolve } = require('node:path');
const { TOKEN, buildsFromArgs, freePort, serverEnv, sleep, untilAnswering } = require('./lib');
const { NODE, SERVICE_FLAGS, seedSqlite } = require('./node');
const { acceptExport } = require('./tracing');

const args = process.argv.slice(2);
const option = (name, fallback) => (args.includes(name) ? args[args.indexOf(name) + 1] : fallback);
const REQUESTS = Number(option('--requests', 1000));
const WARMUP = Number(option('--warmup', 1500));
const ONLY = option('--only', undefined);
// --keep <folder>: keep each run's callgrind output there, for callgrind_annotate.
const KEEP = option('--keep', undefined);
// --simulate: callgrind also simulates the caches and the branch predictor, and reports their misses
// per request: where two builds run about as many instructions, these say which one waits longer
// for memory and for mispredicted branches (a machine's real counters are not exposed in this VM).
const SIMULATE = args.includes('--simulate');
// --hash-seed <n>: V8's hash seed for every build (random per process by default). A list sets ~300
// row properties a request, each looked up along the prototype chain in V8's hash tables, whose probe
// lengths follow the seed: two builds with the same list code read 33k and 73k instructions a list
// there (1,295k against 1,333k in all), and 1,353k against 1,352k with --hash-seed 1.
const HASH_SEED = option('--hash-seed', undefined);
const CONCURRENCY = 4;
const ENVS = args.flatMap((arg, i) => (args[i - 1] === '--env' ? [arg] : []));
const BUILDS = buildsFromArgs(args).map((build) => ({
  ...build,
  env: Object.fromEntries(
    ENVS.filter((spec) => spec.startsWith(`${build.name}:`)).map((spec) => {
      const assignment = spec.slice(build.name.length + 1);
      const eq = assignment.indexOf('=');
      return [assignment.slice(0, eq), assignment.slice(eq + 1)];
    }),
  ),
}));

// Plants stored (with one statement, before the warm-up) for the read scenarios: ids 1..SEEDED.
const SEEDED = 100_000;
const SCENARIOS = [
  { name: 'create (SQLite)', status: 200, body: (id) => ({ id, name: 'Monstera', tag: 'tropical' }) },
  { name: '400 invalid body', status: 400, body: (id) => ({ id: String(id), name: 5 }) },
  // A different id on every request, spread over the seeded store.
  { name: 'get by id (SQLite)', status: 200, seed: SEEDED, path: (n) => `/plants/${((n * 7919) % SEEDED) + 1}` },
  { name: 'list first page (SQLite)', status: 200, seed: SEEDED, path: () => '/plants' },
  { name: 'list deep page (SQLite)', status: 200, seed: SEEDED, path: () => `/plants?after=${SEEDED - 5000}` },
].filter(({ name }) => ONLY === undefined || name.includes(ONLY));

const VGDB_ENV = { PATH: process.env.PATH, USER: 'bench', LOGNAME: 'bench', HOST: '127.0.0.1', HOSTNAME: 'bench' };

/**
 * `count` requests, CONCURRENCY at a time, each with the next id; every answer must have `status`.
 * A scenario with a `body` POSTs it to /plants; one with a `path` GETs that path.
 */
async function send(url, scenario, ids, count) {
  const next = () => ids.next++;
  const worker = async () => {
    for (let sent = 0; sent < count / CONCURRENCY; sent++) {
      const res = scenario.path
        ? await fetch(`${url}${scenario.path(next())}`, { headers: { authorization: `Bearer ${TOKEN}` } })
        : await fetch(`${url}/plants`, {
            method: 'POST',
            headers: { 'content-type': 'application/json', authorization: `Bearer ${TOKEN}` },
            body: JSON.stringify(scenario.body(next())),
          });
      await res.arrayBuffer();
      if (res.status !== scenario.status) throw new Error(`${scenario.name}: ${res.status}`);
    }
  };
  await Promise.all(Array.from({ length: CONCURRENCY }, worker));
}

/**
 * Turns instrumentation on or off. vgdb names its shared files after the user and the host, read
 * from the environment (USER, HOST: the service's listening address): both sides get VGDB_ENV.
 */
function callgrindControl(pid, state) {
  const answer = execFileSync('callgrind_control', ['-i', state, String(pid)], { env: VGDB_ENV });
  if (!/OK/.test(answer.toString())) throw new Error(`callgrind_control -i ${state}: ${answer}`);
}

/** Writes the counts so far to `<out>.1` and starts counting again from zero. */
function callgrindDump(pid) {
  const answer = execFileSync('callgrind_control', ['-d', String(pid)], { env: VGDB_ENV });
  if (!/OK/.test(answer.toString())) throw new Error(`callgrind_control -d: ${answer}`);
}

/**
 * The instructions spent in V8's compilers (TurboFan, Maglev, Sparkplug), by function: a build whose
 * code is still being optimised in the window pays them once, not per request, so they are reported
 * apart from the rest (the steady-state cost).
 */
function jitInstructions(out) {
  const listing = execFileSync('callgrind_annotate', ['--inclusive=no', '--threshold=100', out], {
    maxBuffer: 256 * 1024 * 1024,
  }).toString();
  let total = 0;
  for (const line of listing.split('\n')) {
    const match = /^\s*([0-9,]+) \(/.exec(line);
    if (match && /v8::internal::(?:compiler|maglev|baseline)::/.test(line))
      total += Number(match[1].replaceAll(',', ''));
  }
  return total;
}

/** An OTLP/HTTP receiver that accepts everything (for builds run with tracing on). */
async function startSink() {
  const server = createHttpServer((request, response) => {
    request.resume();
    request.on('end', () => acceptExport(request, response));
  });
  await new Promise((done) => server.listen(0, '127.0.0.1', done));
  return { url: `http://127.0.0.1:${server.address().port}`, close: () => server.close() };
}

async function measure(scenario, build, sink) {
  const dir = mkdtempSync(join(os.tmpdir(), 'plant-store-callgrind-'));
  const out = join(dir, 'callgrind.out');
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const child = spawn(
    'valgrind',
    [
      '--tool=callgrind',
      '--instr-atstart=no',
      ...(SIMULATE ? ['--cache-sim=yes', '--branch-sim=yes'] : []),
      `--callgrind-out-file=${out}`,
      NODE,
      ...SERVICE_FLAGS,
      ...(HASH_SEED === undefined ? [] : [`--hash-seed=${HASH_SEED}`]),
      build.main,
    ],
    {
      env: {
        ...VGDB_ENV,
        ...serverEnv(port),
        DATABASE_URL: `sqlite:${join(dir, 'plants.db')}`,
        DATA_DIR: dir,
        ...Object.fromEntries(
          Object.entries(build.env).map(([name, value]) => [name, value.replace('{sink}', sink.url)]),
        ),
      },
      stdio: ['ignore', 'ignore', 'ignore'],
    },
  );
  try {
    // Under valgrind start-up takes a minute or more.
    await untilAnswering(url, child, build.name, { timeoutMs: 300000 });
    if (scenario.seed) seedSqlite(join(dir, 'plants.db'), scenario.seed);
    const ids = { next: 1000 };
    await send(url, scenario, ids, WARMUP);
    const started = Date.now();
    callgrindControl(child.pid, 'on');
    await send(url, scenario, ids, REQUESTS);
    callgrindDump(child.pid); // the measured window, to `${out}.1`
    await sleep(Date.now() - started); // the idle window, as long
    callgrindControl(child.pid, 'off');
    await new Promise((done) => {
      child.once('exit', done);
      child.kill('SIGTERM');
    });
    const measured = `${out}.1`;
    if (KEEP) {
      const name = `callgrind.${build.name}.${scenario.name.replace(/\W+/g, '-')}`;
      copyFileSync(measured, join(resolve(KEEP), `${name}.out`));
      copyFileSync(out, join(resolve(KEEP), `${name}.idle.out`));
    }
    // The totals line's counts, by event name (Ir alone unless --simulate).
    const events = (file) => {
      const text = readFileSync(file, 'utf8');
      const names = /^events: (.+)$/m.exec(text)?.[1].split(' ') ?? [];
      const counts = /^totals: (.+)$/m.exec(text)?.[1].split(' ').map(Number) ?? [];
      return Object.fromEntries(names.map((name, i) => [name, counts[i] ?? 0]));
    };
    const [all, idleEvents] = [events(measured), events(out)];
    const perRequest = (name) => ((all[name] ?? 0) - (idleEvents[name] ?? 0)) / REQUESTS;
    const idle = idleEvents.Ir ?? 0;
    return {
      simulated: SIMULATE
        ? {
            l1InstructionMisses: perRequest('I1mr'),
            l1DataMisses: perRequest('D1mr') + perRequest('D1mw'),
            lastLevelMisses: perRequest('ILmr') + perRequest('DLmr') + perRequest('DLmw'),
            mispredictedBranches: perRequest('Bcm') + perRequest('Bim'),
          }
        : undefined,
      all: perRequest('Ir'),
      jit: (jitInstructions(measured) - (idle > 0 ? jitInstructions(out) : 0)) / REQUESTS,
      idle: idle / REQUESTS,
    };
  } finally {
    if (child.exitCode === null) child.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  }
}

async function main() {
  const sink = await startSink();
  for (const scenario of SCENARIOS) {
    const counts = {};
    for (const build of BUILDS) {
      const { all, jit, idle, simulated } = await measure(scenario, build, sink);
      counts[build.name] = all - jit;
      console.log(
        `${scenario.name} ${build.name}: ${((all - jit) / 1000).toFixed(0)} k instructions/request ` +
          `outside V8's compilers (${(all / 1000).toFixed(0)} k with them; idle window subtracted: ` +
          `${(idle / 1000).toFixed(1)} k/request)`,
      );
      if (simulated) {
        console.log(
          `  simulated, per request: ${Object.entries(simulated)
            .map(([name, count]) => `${name} ${(count / 1000).toFixed(2)} k`)
            .join(', ')}`,
        );
      }
    }
    const [reference] = BUILDS;
    for (const { name } of BUILDS.slice(1)) {
      const delta = counts[name] - counts[reference.name];
      console.log(
        `  ${name} − ${reference.name}: ${(delta / 1000).toFixed(0)} k (${((100 * delta) / counts[reference.name]).toFixed(1)} % of ${reference.name})`,
      );
    }
  }
  sink.close();
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
