'use strict';
// Helpers the bench scripts share: ports, the token, options, which Node and flags run a server,
// fresh stores and seeding, CPU time and memory of a process from /proc.
const { execFileSync, spawn } = require('node:child_process');
const autocannon = require('autocannon');
const { randomBytes } = require('node:crypto');
const { mkdtempSync, readdirSync, readFileSync, rmSync } = require('node:fs');
const { createServer } = require('node:net');
const os = require('node:os');
const { join, resolve } = require('node:path');

// BENCH_NODE runs the servers on another Node, from a tree whose better-sqlite3 is built for it
// (bench/README.md); seeding uses better-sqlite3 too, so it runs in a child of that Node.
const NODE = process.env.BENCH_NODE || process.execPath;
const ROOT = join(__dirname, '..');
/** The service's shipped Node flags (`npm start`'s); BENCH_SERVICE_FLAGS replaces them, for experiments. */
const SERVICE_FLAGS =
  process.env.BENCH_SERVICE_FLAGS?.split(' ').filter(Boolean) ?? require('../scripts/service-flags').SERVICE_NODE_FLAGS;

/** The bench's bearer token (production settings refuse a static token under 32 characters). */
const TOKEN = 'bench-token-0123456789abcdef0123456789';
/** The bench's scrape token (METRICS_TOKENS): a plants token is 403 on /metrics. */
const METRICS_TOKEN = 'bench-metrics-token-0123456789abcdef';

/** The value after `--name` on the command line, or `fallback`. */
function option(name, fallback) {
  const i = process.argv.indexOf(`--${name}`);
  return i === -1 ? fallback : process.argv[i + 1];
}

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

// The summaries of the scenarios that run rounds of their own (webhooks, tracing, auth failures).
/** The median over `rounds` of each number they hold, found by the same keys in each round. */
function medians(rounds) {
  const [first] = rounds;
  if (typeof first === 'number') return median(rounds);
  if (first === null || typeof first !== 'object') return first;
  const result = Array.isArray(first) ? [] : {};
  for (const key of Object.keys(first)) result[key] = medians(rounds.map((round) => round[key]));
  return result;
}

/** Prints each number of `summary` on a line of its own, named by its keys: `two.deliveredPerSecond 6172`. */
function printSummary(title, summary) {
  console.log(`\n${title}`);
  const print = (value, path) => {
    if (typeof value === 'number') console.log(`  ${path} ${Number.isInteger(value) ? value : value.toFixed(2)}`);
    else if (value !== null && typeof value === 'object') {
      for (const [key, inner] of Object.entries(value)) print(inner, path === '' ? key : `${path}.${key}`);
    }
  };
  print(summary, '');
}

/** The p-th percentile (0–100) of sorted numbers. */
const percentile = (sorted, p) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];

/** The n-th request's id: a different one on every request, spread over plants 1..seeded. */
const spread = (n, seeded) => ((n * 7919) % seeded) + 1;

/** What a server under load runs with: production settings on 127.0.0.1:`port`, request logs off (warn). */
function serverEnv(port) {
  return {
    HOST: '127.0.0.1',
    PORT: String(port),
    AUTH_TOKENS: TOKEN,
    METRICS_TOKENS: METRICS_TOKEN,
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
    if (await fetch(url).then(Boolean, () => false)) return;
    await sleep(stepMs);
  }
  throw new Error(`${name} did not answer within ${timeoutMs / 1000} s`);
}

/**
 * Runs `main` (with Node `flags`) on NODE and a free port; resolves once it answers, killed if it never does.
 * Its stdout goes to `stdout` (a file descriptor; by default nowhere).
 */
async function startServer(main, flags, env, name, { stdout = 'ignore', ...wait } = {}) {
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const started = process.hrtime.bigint();
  const child = spawn(NODE, [...flags, main], {
    env: { PATH: process.env.PATH, ...serverEnv(port), ...env },
    stdio: ['ignore', stdout, 'inherit'],
  });
  await untilAnswering(url, child, name, wait).catch((error) => {
    child.kill('SIGKILL');
    throw error;
  });
  return { child, url, started };
}

/**
 * The builds named on a command line: each argument `name=target` (a name of letters, digits, `_`, `.`
 * or `-`), the target a dist folder (its main.js is run) or a script (`.js`, e.g. bench/baseline-server.js).
 * Other arguments, options' values included (`--path /plants?tag=even`, `--env name:VAR=value`), are not builds.
 * `--env name:VAR=value` (repeatable) gives the build `name` a variable: its `env`.
 */
function buildsFromArgs(args) {
  const envs = args.flatMap((arg, i) => (args[i - 1] === '--env' ? [arg] : []));
  return args
    .filter((arg, i) => /^[\w.-]+=/.test(arg) && args[i - 1] !== '--env')
    .map((arg) => {
      const [, name, target] = /^([^=]+)=(.*)$/.exec(arg);
      const mine = envs.filter((spec) => spec.startsWith(`${name}:`)).map((spec) => spec.slice(name.length + 1));
      const env = Object.fromEntries(mine.map((assignment) => /^([^=]*)=(.*)$/s.exec(assignment).slice(1)));
      return { name, main: target.endsWith('.js') ? resolve(target) : join(resolve(target), 'main.js'), env };
    });
}

/** Signals `child` (SIGKILL by default) and resolves once it has exited: its connections and files are closed then. */
function killAndWait(child, signal = 'SIGKILL') {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  const exited = new Promise((done) => child.once('exit', done));
  child.kill(signal);
  return exited;
}

/**
 * autocannon on `url`/plants with the bench's bearer token (`token`; none if false): a POST of
 * `body(context)` as JSON, or a GET (or `method`) of `path()` when given; `onResponse(status, body,
 * context)` as autocannon's (the context is the connection's); the other options are autocannon's.
 */
function loadPlants(url, { token = TOKEN, body, path, onResponse, ...options }) {
  const headers = {
    ...(body && { 'content-type': 'application/json' }),
    ...(token && { authorization: `Bearer ${token}` }),
  };
  const setupRequest = (req, context) => ({
    ...req,
    ...(path && { path: path() }),
    ...(body && { body: JSON.stringify(body(context)) }),
  });
  const method = body ? 'POST' : 'GET';
  return autocannon({ url: `${url}/plants`, method, headers, requests: [{ setupRequest, onResponse }], ...options });
}

/** The version of the Node the targets run on (e.g. v26.10.0). */
function nodeVersion() {
  return NODE === process.execPath ? process.version : execFileSync(NODE, ['--version']).toString().trim();
}

/** Stores plants 1..count in the SQLite database at `path` (its schema made by the service), with one statement. */
function seedSqlite(path, count) {
  const script = `
    const Database = require('better-sqlite3');
    const db = new Database(process.argv[1]);
    db.exec(\`WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < \${Number(process.argv[2])})
             INSERT INTO plants (id, name, tag) SELECT i, 'plant ' || i, CASE WHEN i % 2 = 0 THEN 'even' END FROM n\`);
    db.close();`;
  execFileSync(NODE, ['-e', script, path, String(count)], { cwd: ROOT, stdio: ['ignore', 'ignore', 'inherit'] });
}

/**
 * A fresh, empty store for one run of a server: an SQLite file in a temporary folder, or a schema of
 * its own in BENCH_DATABASE_URL's database. `env` points a server at it, `seed(count)` stores plants
 * 1..count once the server has made the table, `drop` removes it all.
 */
async function freshStore(store) {
  if (store === 'sqlite') {
    const dir = mkdtempSync(join(os.tmpdir(), 'plant-store-bench-'));
    const path = join(dir, 'plants.db');
    return {
      env: { DATABASE_URL: `sqlite:${path}`, DATA_DIR: dir },
      seed: async (count) => seedSqlite(path, count),
      drop: async () => rmSync(dir, { recursive: true, force: true }),
    };
  }
  const { Client } = require('pg');
  const schema = `plant_store_bench_${randomBytes(6).toString('hex')}`;
  const admin = async (sql) => {
    const client = new Client({ connectionString: process.env.BENCH_DATABASE_URL });
    await client.connect();
    try {
      await client.query(sql);
    } finally {
      await client.end();
    }
  };
  await admin(`CREATE SCHEMA ${schema}`);
  const url = new URL(process.env.BENCH_DATABASE_URL);
  url.searchParams.set('options', `-c search_path=${schema}`);
  return {
    env: { DATABASE_URL: url.toString(), DATABASE_POOL_MAX: '10' },
    seed: async (count) => {
      await admin(`INSERT INTO ${schema}.plants (id, name, tag)
                   SELECT i, 'plant ' || i, CASE WHEN i % 2 = 0 THEN 'even' END FROM generate_series(1, ${count}) AS i`);
      await admin(`ANALYZE ${schema}.plants`);
    },
    drop: () => admin(`DROP SCHEMA ${schema} CASCADE`),
  };
}

/** Nanoseconds the process has spent on a CPU so far: all its threads, and its main thread alone. */
function cpuNs(pid) {
  let all = 0;
  let main = 0;
  for (const task of readdirSync(`/proc/${pid}/task`)) {
    try {
      const ns = Number(readFileSync(`/proc/${pid}/task/${task}/schedstat`, 'utf8').split(' ')[0]);
      all += ns;
      if (task === String(pid)) main = ns;
    } catch {
      // a thread that ended between the listing and the read
    }
  }
  return { all, main };
}

/** Current and peak resident set of a process, in MiB (Linux VmRSS and VmHWM). */
function rssMiB(pid) {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kib = (field) => Number(new RegExp(`${field}:\\s+(\\d+) kB`).exec(status)[1]);
  return { current: kib('VmRSS') / 1024, peak: kib('VmHWM') / 1024 };
}

module.exports = {
  NODE,
  SERVICE_FLAGS,
  METRICS_TOKEN,
  TOKEN,
  buildsFromArgs,
  cpuNs,
  freePort,
  freshStore,
  killAndWait,
  loadPlants,
  median,
  medians,
  nodeVersion,
  option,
  percentile,
  printSummary,
  rssMiB,
  seedSqlite,
  serverEnv,
  sleep,
  spread,
  startServer,
  untilAnswering,
};
