'use strict';
// Instructions per request of builds of the service under valgrind's callgrind (bench/README.md):
//   node bench/fastpaths-callgrind.js [--requests 1000] [--warmup 1500] [--only 400|401|get…]
//        [--hash-seed 1] [--simulate] [--env name:VAR=value] name=path/to/dist|script.js ...
// Instrumentation is on for the measured requests only; an idle window as long follows, whose
// instructions (timers) are subtracted, and V8's compilers' are reported apart. `{sink}` in an --env
// value is this script's OTLP sink.
const { execFileSync, spawn } = require('node:child_process');
const { mkdtempSync, readFileSync, rmSync } = require('node:fs');
const os = require('node:os');
const { join } = require('node:path');
const { NODE, SERVICE_FLAGS, TOKEN, buildsFromArgs, freePort, option } = require('./lib');
const { seedSqlite, serverEnv, sleep, spread, untilAnswering } = require('./lib');
const { startSink } = require('./tracing');

const args = process.argv.slice(2);
const REQUESTS = Number(option('requests', 1000));
const WARMUP = Number(option('warmup', 1500));
const ONLY = option('only');
// Cache and branch misses too (the VM exposes no real counters), for builds with about as many instructions.
const SIMULATE = args.includes('--simulate');
// V8's hash seed for every build (random by default): it moves a list's instructions ±10 % (bench/README.md).
const HASH_SEED = option('hash-seed');
const CONCURRENCY = 4;
const BUILDS = buildsFromArgs(args);

// Plants stored (with one statement, before the warm-up) for the read scenarios: ids 1..SEEDED.
const SEEDED = 100_000;
const SCENARIOS = [
  { name: 'create (SQLite)', status: 200, body: (id) => ({ id, name: 'Monstera', tag: 'tropical' }) },
  { name: '400 invalid body', status: 400, body: (id) => ({ id: String(id), name: 5 }) },
  { name: 'get by id (SQLite)', status: 200, seed: SEEDED, path: (n) => `/plants/${spread(n, SEEDED)}` },
  { name: 'list first page (SQLite)', status: 200, seed: SEEDED, path: () => '/plants' },
  { name: 'list deep page (SQLite)', status: 200, seed: SEEDED, path: () => `/plants?after=${SEEDED - 5000}` },
  // A wrong bearer token, all from one address, counted but never limited (so every answer is a 401).
  {
    name: '401 wrong token',
    status: 401,
    path: (n) => `/plants/${n}`,
    token: 'not-a-valid-token',
    env: { AUTH_FAILURES_PER_MINUTE: '1000000' },
  },
].filter(({ name }) => ONLY === undefined || name.includes(ONLY));

const VGDB_ENV = { PATH: process.env.PATH, USER: 'bench', LOGNAME: 'bench', HOST: '127.0.0.1', HOSTNAME: 'bench' };

/**
 * `count` requests, CONCURRENCY at a time, each with the next id; every answer must have `status`.
 * A scenario with a `body` POSTs it to /plants; one with a `path` GETs that path.
 */
async function send(url, scenario, ids, count) {
  const worker = async () => {
    for (let sent = 0; sent < count / CONCURRENCY; sent++) {
      const id = ids.next++;
      const res = await fetch(`${url}${scenario.path?.(id) ?? '/plants'}`, {
        method: scenario.body ? 'POST' : 'GET',
        headers: {
          ...(scenario.body && { 'content-type': 'application/json' }),
          authorization: `Bearer ${scenario.token ?? TOKEN}`,
        },
        body: scenario.body && JSON.stringify(scenario.body(id)),
      });
      await res.arrayBuffer();
      if (res.status !== scenario.status) throw new Error(`${scenario.name}: ${res.status}`);
    }
  };
  await Promise.all(Array.from({ length: CONCURRENCY }, worker));
}

/**
 * `callgrind_control` of the process: `-i on|off` turns instrumentation on or off, `-d` writes the counts
 * so far to `<out>.1` and starts again from zero. vgdb names its shared files after the user and the
 * host, read from the environment (USER, HOST: the service's listening address): both sides get VGDB_ENV.
 */
function callgrindControl(pid, ...options) {
  const answer = execFileSync('callgrind_control', [...options, String(pid)], { env: VGDB_ENV });
  if (!/OK/.test(answer.toString())) throw new Error(`callgrind_control ${options.join(' ')}: ${answer}`);
}

/** The instructions of V8's compilers: a build still being optimised pays them once, not per request. */
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
      // A variant without some layers (bench/layers-off.js, for the per-layer table).
      ...(build.env.BENCH_LAYERS_OFF === undefined ? [] : ['-r', require.resolve('./layers-off')]),
      build.main,
    ],
    {
      env: {
        ...VGDB_ENV,
        ...serverEnv(port),
        ...scenario.env,
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
    callgrindControl(child.pid, '-i', 'on');
    await send(url, scenario, ids, REQUESTS);
    callgrindControl(child.pid, '-d'); // the measured window, to `${out}.1`
    await sleep(Date.now() - started); // the idle window, as long
    callgrindControl(child.pid, '-i', 'off');
    await new Promise((done) => {
      child.once('exit', done);
      child.kill('SIGTERM');
    });
    const measured = `${out}.1`;
    // The totals line's counts, by event name (Ir, instructions, alone unless --simulate).
    const events = (file) => {
      const text = readFileSync(file, 'utf8');
      const counts = /^totals: (.+)$/m.exec(text)?.[1].split(' ').map(Number) ?? [];
      const names = /^events: (.+)$/m.exec(text)?.[1].split(' ') ?? [];
      return new Map(names.map((name, i) => [name, counts[i] ?? 0]));
    };
    const [all, idle] = [events(measured), events(out)];
    const perRequest = [...all].map(([name, count]) => [name, (count - (idle.get(name) ?? 0)) / REQUESTS]);
    const jit = (jitInstructions(measured) - (idle.get('Ir') > 0 ? jitInstructions(out) : 0)) / REQUESTS;
    return { perRequest: new Map(perRequest), jit, idle: (idle.get('Ir') ?? 0) / REQUESTS };
  } finally {
    if (child.exitCode === null) child.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  }
}

async function main() {
  const sink = await startSink();
  const k = (count) => `${(count / 1000).toFixed(0)} k`;
  for (const scenario of SCENARIOS) {
    const counts = new Map();
    for (const build of BUILDS) {
      const { perRequest, jit, idle } = await measure(scenario, build, sink);
      sink.take(); // the spans of tracing builds, not counted here
      const all = perRequest.get('Ir');
      counts.set(build.name, all - jit);
      console.log(
        `${scenario.name} ${build.name}: ${k(all - jit)} instructions/request outside V8's compilers ` +
          `(${k(all)} with them; idle window subtracted: ${(idle / 1000).toFixed(1)} k/request)`,
      );
      // With --simulate, the other events: cache reads, writes and misses, branches and mispredictions (I1mr, Bcm, …).
      const simulated = [...perRequest].filter(([name]) => name !== 'Ir');
      if (simulated.length > 0)
        console.log(`  per request: ${simulated.map(([n, c]) => `${n} ${c.toFixed(0)}`).join(', ')}`);
    }
    const reference = counts.get(BUILDS[0].name);
    for (const { name } of BUILDS.slice(1)) {
      const delta = counts.get(name) - reference;
      console.log(`  ${name} − ${BUILDS[0].name}: ${k(delta)} (${((100 * delta) / reference).toFixed(1)} %)`);
    }
  }
  sink.close();
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
