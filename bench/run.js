'use strict';
// npm run bench [-- options]: the scenarios, the smoke comparison and the report (bench/README.md).
const {
  closeSync,
  fsyncSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readFileSync,
  rmSync,
  writeFileSync,
  writeSync,
} = require('node:fs');
const os = require('node:os');
const { join, resolve } = require('node:path');
const { runWebhookBench } = require('./webhooks');
const { runTracingBench } = require('./tracing');
const { runAuthFailuresBench } = require('./auth-failures');
const { runSoak } = require('./soak');
const { METRICS_TOKEN, SERVICE_FLAGS, TOKEN, freshStore, median, nodeVersion, option } = require('./lib');
const { killAndWait, loadPlants, rssMiB, sleep, spread, startServer } = require('./lib');
const { STOCK_NEST_MAIN, buildStockNest } = require('./stock-nest/build');

const args = process.argv.slice(2);
const SMOKE = args.includes('--smoke');
const ROUNDS = Number(option('rounds', SMOKE ? 1 : 3));
const DURATION = SMOKE ? 1 : Number(option('duration', 5));
const WARMUP = Number(option('warmup', 1));
const CONNECTIONS = Number(option('connections', 32));
const ONLY = option('only');
const ROOT = join(__dirname, '..');
const TARGETS = {
  // BENCH_SERVICE_DIST: another build of the service (a dist folder), measured in its place.
  service: join(
    process.env.BENCH_SERVICE_DIST ? resolve(process.env.BENCH_SERVICE_DIST) : join(ROOT, 'dist'),
    'main.js',
  ),
  baseline: join(__dirname, 'baseline-server.js'),
  'stock-nest': STOCK_NEST_MAIN, // compiled from bench/stock-nest/*.ts by main(), run without the service's flags
  'stock-nest-layered': STOCK_NEST_MAIN, // the same with the layers a team ships (STOCK_NEST_LAYERS=on)
};
// Every server writes its stdout (the request log) to a file, as a deployed one does; not to a pipe the bench drains.
const STDOUT_DIR = mkdtempSync(join(os.tmpdir(), 'plant-store-bench-stdout-'));
process.on('exit', () => rmSync(STDOUT_DIR, { recursive: true, force: true }));

/** Starts a target and resolves once it answers HTTP (any status). */
function start(target, env) {
  const flags = target === 'service' ? SERVICE_FLAGS : [];
  // The 401 scenario measures the 401 path (counting included), not the 429 the default limit would make of it.
  // The service runs with every layer on by default, its request log at info among them (to a file).
  const defaults = {
    AUTH_FAILURES_PER_MINUTE: '1000000',
    ...(target === 'service' && { LOG_LEVEL: 'info' }),
    ...(target === 'stock-nest-layered' && { STOCK_NEST_LAYERS: 'on' }),
  };
  const stdout = openSync(join(STDOUT_DIR, `${target}.log`), 'w');
  return startServer(TARGETS[target], flags, { ...defaults, ...env }, target, { stepMs: 5, stdout }).finally(() =>
    closeSync(stdout),
  );
}

/** SIGTERM (the service flushes its spans and closes its store), resolved once it has exited; again, a no-op. */
const stop = ({ child }) => killAndWait(child, 'SIGTERM');

async function post(url, body) {
  const headers = { 'content-type': 'application/json', authorization: `Bearer ${TOKEN}` };
  const res = await fetch(`${url}/plants`, { method: 'POST', headers, body: JSON.stringify(body) });
  await res.text();
  return res.status;
}

// Reads and deletes run against a store seeded with this many plants (ids 1…SEEDED) by one SQL statement.
const SEEDED = SMOKE ? 100_000 : 1_000_000;

// Each scenario: the request (POST with a body unless a method and path are given; a fresh id per
// request where it matters) and its expected status; stockNest: also against the stock peer, bare and layered.
const create = (label, store) => ({
  name: `create (${label})`,
  store,
  status: 200,
  stockNest: true,
  body: (id) => ({ id, name: 'Monstera', tag: 'tropical' }),
});
const REPLAYED = { id: 1, name: 'Replay', tag: 'same' };
const replay = (label, store) => ({
  name: `replay (${label})`,
  store,
  status: 200,
  stockNest: true,
  body: () => REPLAYED,
  setup: (url) => post(url, REPLAYED),
});
const SCENARIOS = [
  create('SQLite', 'sqlite'),
  // The same creates, the service at FULL against the baseline at NORMAL: durable against non-durable.
  {
    ...create('SQLite, baseline at synchronous=NORMAL', 'sqlite'),
    stockNest: false,
    baselineEnv: { BASELINE_SQLITE_SYNCHRONOUS: 'NORMAL' },
  },
  replay('SQLite', 'sqlite'),
  {
    name: '400 invalid body',
    store: 'sqlite',
    status: 400,
    stockNest: true,
    body: (id) => ({ id: String(id), name: 5 }),
  },
  {
    name: '401 no token',
    store: 'sqlite',
    status: 401,
    auth: false,
    stockNest: true,
    body: (id) => ({ id, name: 'x' }),
  },
  ...readScenarios('SQLite', 'sqlite'),
  ...(process.env.BENCH_DATABASE_URL && !SMOKE
    ? [create('PostgreSQL', 'postgres'), replay('PostgreSQL', 'postgres'), ...readScenarios('PostgreSQL', 'postgres')]
    : []),
];

/** List a first and a deep page, get by id and delete, in a store of SEEDED plants. */
function readScenarios(label, store) {
  const read = (what, path) => ({
    name: `${what} (${label}, ${SEEDED / 1000}k plants)`,
    store,
    seed: SEEDED,
    status: 200,
    stockNest: true,
    method: 'GET',
    path,
  });
  return [
    read('list first page', () => '/plants'),
    read('list deep page', () => `/plants?after=${SEEDED - 5000}`),
    // Also against the same build at LOG_LEVEL=warn: what the request line costs (logRatio).
    { ...read('get by id', (n) => `/plants/${spread(n, SEEDED)}`), logAtWarn: true },
    // Every request deletes a plant that is there: ids 1, 2, 3… (a run deletes far fewer than SEEDED).
    { ...read('delete', (n) => `/plants/${n - 999}`), status: 204, stockNest: false, method: 'DELETE' },
  ];
}

async function measure(scenario, target, env = {}) {
  const store = await freshStore(scenario.store);
  const server = await start(target, { ...store.env, ...(target === 'baseline' ? scenario.baselineEnv : {}), ...env });
  try {
    await scenario.setup?.(server.url);
    if (scenario.seed) await store.seed(scenario.seed);
    let nextId = 1000;
    const load = (duration) =>
      loadPlants(server.url, {
        ...(scenario.method && { method: scenario.method }),
        token: scenario.auth !== false && TOKEN,
        connections: CONNECTIONS,
        duration,
        ...(scenario.path && { path: () => scenario.path(nextId++) }),
        ...(scenario.body && { body: () => scenario.body(nextId++) }),
      });
    await load(WARMUP); // warm-up: JIT, pools, caches
    const result = await load(DURATION);
    const expected =
      scenario.status < 300 ? result['2xx'] : (result.statusCodeStats[`${scenario.status}`]?.count ?? result.non2xx);
    const unexpected = Object.keys(result.statusCodeStats).filter((status) => Number(status) !== scenario.status);
    if (result.errors > 0 || result.timeouts > 0 || expected === 0 || unexpected.length > 0) {
      throw new Error(
        `${target} ${scenario.name}: ${result.errors} errors, ${result.timeouts} timeouts, statuses ${JSON.stringify(result.statusCodeStats)}`,
      );
    }
    return {
      rps: result.requests.average,
      p50: result.latency.p50,
      p99: result.latency.p99,
      rssMiB: rssMiB(server.child.pid).peak,
      statusCodes: result.statusCodeStats,
    };
  } finally {
    await stop(server);
    await store.drop();
  }
}

/** Spawn to first 200 on the embedded store, in ms. */
async function startupMs() {
  const store = await freshStore('sqlite');
  const server = await start('service', store.env);
  let status = 0;
  while (status !== 200) {
    status = await post(server.url, { id: 1, name: 'First' }).catch(() => 0);
    if (status !== 200) await sleep(5);
  }
  const ms = Number(process.hrtime.bigint() - server.started) / 1e6;
  await stop(server);
  await store.drop();
  return ms;
}

// What the scenarios of their own files (soak, webhooks, tracing, auth failures) are given.
const helpers = {
  median,
  start,
  stop,
  freshStore,
  rounds: ROUNDS,
  duration: DURATION,
  connections: CONNECTIONS,
  token: TOKEN,
  metricsToken: METRICS_TOKEN,
  seeded: SEEDED,
};

async function main() {
  if (args.includes('--soak')) {
    const soak = await runSoak(helpers);
    mkdirSync(join(__dirname, 'results'), { recursive: true });
    writeFileSync(
      join(__dirname, 'results', 'soak.json'),
      `${JSON.stringify({ date: new Date().toISOString(), soak }, null, 2)}\n`,
    );
    if (!soak.every((result) => result.pass)) process.exitCode = 1;
    return;
  }
  // Before the load: not while the kernel still writes back the bench's deleted SQLite files.
  const fsync = fsyncMicros();
  const results = [];
  const scenarios = SCENARIOS.filter((s) => ONLY === undefined || s.name.includes(ONLY));
  if (scenarios.some((s) => s.stockNest)) buildStockNest();
  for (const scenario of scenarios) {
    const rounds = [];
    for (let round = 1; round <= ROUNDS; round++) {
      // A then B (then C), round after round, so drift on the machine hits all alike. Each ratio is the
      // service's req/s over that target's: `ratio` (the baseline), the stock peers', `logRatio` (at warn).
      const runs = [
        ['service', 'service'],
        ...(scenario.logAtWarn ? [['serviceAtWarn', 'service', { LOG_LEVEL: 'warn' }, 'logRatio']] : []),
        ['baseline', 'baseline', {}, 'ratio'],
        ...(scenario.stockNest
          ? [
              ['stockNest', 'stock-nest', {}, 'stockNestRatio'],
              ['stockNestLayered', 'stock-nest-layered', {}, 'layeredRatio'],
            ]
          : []),
      ];
      const result = {};
      for (const [key, target, env] of runs) result[key] = await measure(scenario, target, env);
      const ratios = runs.slice(1).map(([key, , , ratio]) => [key, ratio, result.service.rps / result[key].rps]);
      rounds.push({ ...result, ...Object.fromEntries(ratios.map(([, ratio, value]) => [ratio, value])) });
      const said = ratios.map(
        ([key, ratio, value]) => `${key} ${result[key].rps.toFixed(0)} req/s, ${ratio} ${value.toFixed(2)}`,
      );
      console.log(
        `${scenario.name} round ${round}: service ${result.service.rps.toFixed(0)} req/s, ${said.join('; ')}`,
      );
    }
    const medianOf = (keys, pick) =>
      Object.fromEntries(keys.map((key) => [key, median(rounds.map((r) => pick(r, key)))]));
    // Each target's median (service, baseline, and those the scenario also ran), and each peer's ratio.
    const targets = ['service', 'baseline', 'stockNest', 'stockNestLayered', 'serviceAtWarn'].filter(
      (t) => t in rounds[0],
    );
    const summary = (pick) => medianOf(targets, (r, target) => pick(r[target]));
    const peerRatios = ['stockNestRatio', 'layeredRatio', 'logRatio'].filter((key) => key in rounds[0]);
    results.push({
      scenario: scenario.name,
      rps: summary((r) => r.rps),
      p50Ms: summary((r) => r.p50),
      p99Ms: summary((r) => r.p99),
      peakRssMiB: summary((r) => r.rssMiB),
      throughputRatio: median(rounds.map((r) => r.ratio)),
      ...medianOf(peerRatios, (r, key) => r[key]),
      p99Ratio: median(rounds.map((r) => r.service.p99 / r.baseline.p99)),
      rssRatio: median(rounds.map((r) => r.service.rssMiB / r.baseline.rssMiB)),
      rounds,
    });
  }
  // Webhook delivery on each store (PostgreSQL when BENCH_DATABASE_URL is set; not in the smoke run).
  const webhookStores = ['sqlite', ...(process.env.BENCH_DATABASE_URL && !SMOKE ? ['postgres'] : [])];
  const webhook = {};
  if (ONLY === undefined || 'webhook'.includes(ONLY)) {
    for (const store of webhookStores) webhook[store] = await runWebhookBench({ ...helpers, store });
  }
  // Tracing and the failed-authentication scenario: not in the smoke run.
  const full = (name) => (ONLY === undefined && !SMOKE) || ONLY === name;
  const tracing = full('tracing') ? await runTracingBench(helpers) : undefined;
  const authFailures = full('auth-failures') ? await runAuthFailuresBench(helpers) : undefined;
  const startups = [];
  for (let i = 0; i < ROUNDS; i++) startups.push(await startupMs());

  const report = {
    date: new Date().toISOString(),
    machine: {
      cpu: os.cpus()[0]?.model,
      cores: os.cpus().length,
      memoryGiB: Math.round(os.totalmem() / 2 ** 30),
      node: nodeVersion(),
      platform: `${os.platform()} ${os.release()}`,
      fsyncMicros: fsync,
    },
    settings: {
      rounds: ROUNDS,
      durationS: DURATION,
      connections: CONNECTIONS,
      serviceFlags: SERVICE_FLAGS,
      smoke: SMOKE,
    },
    startupToFirst200Ms: median(startups),
    results,
    webhook,
    tracing,
    authFailures,
  };
  console.log(
    '\n| scenario | service req/s | baseline req/s | ratio | stock-nest req/s | ratio to stock-nest | ratio to layered stock-nest | info/warn | p50 ms (svc/base) | p99 ms (svc/base) | p99 ratio | peak RSS MiB (svc/base) | RSS ratio |',
  );
  console.log('|---|---|---|---|---|---|---|---|---|---|---|---|---|');
  for (const r of results) {
    const stock = r.stockNestRatio === undefined ? ['', ''] : [r.rps.stockNest.toFixed(0), r.stockNestRatio.toFixed(2)];
    const [layered, log] = [r.layeredRatio, r.logRatio].map((ratio) => ratio?.toFixed(2) ?? '');
    console.log(
      `| ${r.scenario} | ${r.rps.service.toFixed(0)} | ${r.rps.baseline.toFixed(0)} | ${r.throughputRatio.toFixed(2)} | ${stock[0]} | ${stock[1]} | ${layered} | ${log} | ${r.p50Ms.service}/${r.p50Ms.baseline} | ${r.p99Ms.service}/${r.p99Ms.baseline} | ${r.p99Ratio.toFixed(2)} | ${r.peakRssMiB.service.toFixed(0)}/${r.peakRssMiB.baseline.toFixed(0)} | ${r.rssRatio.toFixed(2)} |`,
    );
  }
  console.log(`\nStart-up to first 200 (SQLite, median): ${report.startupToFirst200Ms.toFixed(0)} ms`);
  if (SMOKE) compareWithSmokeBaseline(report);
  if (!SMOKE && ONLY === undefined) {
    mkdirSync(join(__dirname, 'results'), { recursive: true });
    writeFileSync(join(__dirname, 'results', 'latest.json'), `${JSON.stringify(report, null, 2)}\n`);
    console.log('Wrote bench/results/latest.json');
  }
}

/**
 * The median µs of an fsync after a 4 KiB write in the temporary folder, where the bench's SQLite files
 * are: about what each durable commit waits for. Null when the folder cannot be written or synced.
 */
function fsyncMicros(samples = 50) {
  let dir;
  let fd;
  const times = [];
  try {
    dir = mkdtempSync(join(os.tmpdir(), 'plant-store-fsync-'));
    fd = openSync(join(dir, 'probe'), 'w');
    const page = Buffer.alloc(4096, 1);
    for (let i = 0; i < samples; i++) {
      writeSync(fd, page);
      const started = process.hrtime.bigint();
      fsyncSync(fd);
      times.push(Number(process.hrtime.bigint() - started) / 1000);
    }
    return Math.round(median(times));
  } catch {
    return null;
  } finally {
    if (fd !== undefined) closeSync(fd);
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * How the machine of `now` differs from that of `then` (two reports' `machine`), in words; undefined
 * when it looks the same. Two fsync times are the same within a factor of 2.5 (one machine's moved
 * 115–224 µs within an hour), or when both are under 20 µs (a RAM disk).
 */
function machineDifference(then = {}, now = {}) {
  const differences = ['cpu', 'cores', 'node', 'platform']
    .filter((key) => then[key] !== now[key])
    .map((key) => `${key} ${then[key] ?? 'not recorded'}, now ${now[key] ?? 'not recorded'}`);
  const [a, b] = [then.fsyncMicros ?? undefined, now.fsyncMicros ?? undefined];
  if (b !== undefined && (a === undefined || (Math.max(a, b) >= 20 && Math.max(a, b) > 2.5 * Math.min(a, b))))
    differences.push(`fsync ${a === undefined ? 'not measured' : `${a} µs`}, now ${b} µs`);
  return differences.length === 0 ? undefined : differences.join('; ');
}

/** The smoke comparison (bench/README.md); this run's report goes to bench/results/smoke.json either way. */
function compareWithSmokeBaseline(report) {
  const dir = join(__dirname, 'results');
  mkdirSync(dir, { recursive: true });
  const baselineFile = join(dir, 'smoke-baseline.json');
  if (args.includes('--save-smoke-baseline')) {
    writeFileSync(baselineFile, `${JSON.stringify(report, null, 2)}\n`);
    console.log('Wrote bench/results/smoke-baseline.json');
    return;
  }
  writeFileSync(join(dir, 'smoke.json'), `${JSON.stringify(report, null, 2)}\n`);
  let baseline;
  try {
    baseline = JSON.parse(readFileSync(baselineFile, 'utf8'));
  } catch {
    console.log(
      '\nNo bench/results/smoke-baseline.json to compare with (npm run bench -- --smoke --rounds 5 --save-smoke-baseline)',
    );
    return;
  }
  const before = new Map(baseline.results.map((r) => [r.scenario, r.throughputRatio]));
  const rows = report.results
    .filter((r) => before.has(r.scenario))
    .map((r) => ({
      scenario: r.scenario,
      was: before.get(r.scenario),
      now: r.throughputRatio,
      stock: r.stockNestRatio,
    }));
  const fallen = rows.filter((r) => r.now < r.was * 0.8);
  const otherMachine = machineDifference(baseline.machine, report.machine);
  console.log(`\nAgainst the smoke baseline of ${baseline.date} (ratio now / then):`);
  if (otherMachine !== undefined) console.log(`  (taken on another machine: ${otherMachine})`);
  for (const r of rows) {
    // The ratio to the stock peer is shown, not compared: the baseline's key is the bare-baseline ratio.
    const stock = r.stock === undefined ? '' : ` (to stock-nest ${r.stock.toFixed(2)})`;
    console.log(
      `  ${r.now < r.was * 0.8 ? '!!' : '  '} ${r.scenario}: ${r.now.toFixed(2)} / ${r.was.toFixed(2)}${stock}`,
    );
  }
  if (fallen.length === 0) {
    console.log('No ratio fell more than 20 % below the smoke baseline.');
    return;
  }
  const bar = '!'.repeat(100);
  const warn = (...lines) => lines.forEach((line) => console.log(`WARNING: ${line}`));
  console.log(`\n${bar}`);
  warn(
    `${fallen.length} ratio(s) fell more than 20 % below the smoke baseline:`,
    ...fallen.map(
      (r) =>
        `  ${r.scenario}: ${r.now.toFixed(2)} against ${r.was.toFixed(2)} (${((r.now / r.was - 1) * 100).toFixed(0)} %)`,
    ),
    'a smoke run is one second per scenario on a shared machine: confirm with `npm run bench`',
    '(three rounds of five seconds) before believing it, and say so in bench/README.md.',
  );
  if (otherMachine !== undefined) {
    warn(
      `the baseline was taken on another machine (${otherMachine}).`,
      'ratios move with the machine, most of all those that weigh an fsync against the CPU',
      '(creates against the baseline at NORMAL, replays). Run the head the baseline was saved',
      'from beside this one to tell the machine from the code.',
    );
  }
  console.log(bar);
  if (process.env.GITHUB_ACTIONS) {
    for (const r of fallen)
      console.log(
        `::warning title=bench regression::${r.scenario} ratio ${r.now.toFixed(2)} < 0.8 x ${r.was.toFixed(2)}`,
      );
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
