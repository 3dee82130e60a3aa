'use strict';
// CPU time of the service per request, by build and tracing's sampling ratio, all threads and the main
// thread apart, each on a fresh SQLite store of 100,000 plants (bench/README.md):
//   node bench/cpu-per-request.js [--requests 60000] [--warmup 30000] [--runs 2] [--connections 32]
//        [--path /plants/4242] [--status 200] [--token <bearer token>] [--tracing off,0,0.01,0.1,1]
//        [--env name:VAR=value] name=path/to/dist|script.js ...
// Failing authentications are counted up to 1,000,000 a minute, so `--status 401` stays 401s.
const { SERVICE_FLAGS, TOKEN, buildsFromArgs, cpuNs: cpu, freshStore, killAndWait } = require('./lib');
const { loadPlants, median, nodeVersion, option, startServer } = require('./lib');
const { startSink } = require('./tracing');

const REQUESTS = Number(option('requests', 60000));
const WARMUP = Number(option('warmup', 30000));
const RUNS = Number(option('runs', 2));
const CONNECTIONS = Number(option('connections', 32));
const PATH = option('path', '/plants/4242');
const STATUS = Number(option('status', 200));
const BEARER = option('token', TOKEN);
const LAYERS_OFF = require.resolve('./layers-off');
const TRACING = option('tracing', 'off').split(',');
const SEEDED = 100_000;
const BUILDS = buildsFromArgs(process.argv.slice(2));
if (BUILDS.length === 0)
  throw new Error('give at least one build: name=path/to/dist (or name=bench/baseline-server.js)');

async function measure(build, ratio, sink) {
  const store = await freshStore('sqlite');
  const sampler = { OTEL_TRACES_SAMPLER: 'parentbased_traceidratio', OTEL_TRACES_SAMPLER_ARG: ratio };
  const tracing = ratio === 'off' ? {} : { OTEL_EXPORTER_OTLP_ENDPOINT: sink.url, ...sampler };
  let child;
  try {
    const flags = build.env.BENCH_LAYERS_OFF === undefined ? SERVICE_FLAGS : [...SERVICE_FLAGS, '-r', LAYERS_OFF];
    const env = { AUTH_FAILURES_PER_MINUTE: '1000000', ...store.env, ...tracing, ...build.env };
    const server = await startServer(build.main, flags, env, build.name);
    ({ child } = server);
    await store.seed(SEEDED);
    const load = (amount) =>
      loadPlants(server.url, { token: BEARER, connections: CONNECTIONS, amount, path: () => PATH });
    await load(WARMUP);
    const before = cpu(child.pid);
    const result = await load(REQUESTS);
    const after = cpu(child.pid);
    const answered = result.statusCodeStats[STATUS]?.count ?? 0;
    if (answered !== REQUESTS) throw new Error(`${build.name}: ${answered} of ${REQUESTS} answered ${STATUS}`);
    sink.take();
    return { main: (after.main - before.main) / 1000 / REQUESTS, all: (after.all - before.all) / 1000 / REQUESTS };
  } finally {
    if (child) await killAndWait(child);
    await store.drop();
  }
}

async function main() {
  console.log(
    `Node ${nodeVersion()}, ${REQUESTS} requests of GET ${PATH} (${STATUS}) after ${WARMUP}, ${CONNECTIONS} connections`,
  );
  const sink = await startSink();
  const results = new Map();
  try {
    // Runs interleaved (every build and setting once, then again), so the machine's drift spreads over all.
    for (let run = 0; run < RUNS; run++) {
      for (const build of BUILDS) {
        for (const ratio of TRACING) {
          const key = `${build.name} tracing ${ratio === 'off' ? 'off' : `${Number(ratio) * 100} %`}`;
          results.set(key, [...(results.get(key) ?? []), await measure(build, ratio, sink)]);
        }
      }
    }
  } finally {
    await sink.close();
  }
  for (const [key, runs] of results) {
    const show = (field) => runs.map((r) => r[field].toFixed(1)).join(' / ');
    console.log(
      `${key}: ${median(runs.map((r) => r.all)).toFixed(1)} µs CPU a request (runs ${show('all')}), ` +
        `main thread ${median(runs.map((r) => r.main)).toFixed(1)} (${show('main')})`,
    );
  }
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
