'use strict';
// The tracing scenario of `npm run bench` (`--only tracing`, bench/README.md). Dropped spans: the server
// spans of ROUTE the sink received by the service's exit (SIGTERM flushes them), against the requests
// its own `http_requests_total` counted on that route.
const { createServer } = require('node:http');
const os = require('node:os');
const { cpuNs, loadPlants, medians, printSummary, spread } = require('./lib');

const ROUTE = '/plants/:id';
// The server span of a request to ROUTE, and no other span, carries `http.route` = ROUTE: in OTLP
// protobuf a KeyValue whose key (field 1) is "http.route" and whose value (field 2) is an AnyValue
// with ROUTE as its string_value (field 1). Counting these bytes counts those spans.
const text = (field, value) => Buffer.concat([Buffer.from([(field << 3) | 2, value.length]), Buffer.from(value)]);
const ROUTE_ATTRIBUTE = Buffer.concat([
  text(1, 'http.route'),
  Buffer.from([(2 << 3) | 2, ROUTE.length + 2]),
  text(1, ROUTE),
]);

/**
 * An OTLP/HTTP (protobuf) receiver that keeps the bodies and counts ROUTE's server spans when asked
 * (`take`, after the load: not during it, on the CPU the load generator shares). It answers as a
 * collector that took everything does, with an empty ExportTraceServiceResponse.
 */
async function startSink() {
  let bodies = [];
  const server = createServer((request, response) => {
    const chunks = [];
    request.on('data', (chunk) => chunks.push(chunk));
    request.on('end', () => {
      bodies.push(Buffer.concat(chunks));
      response.writeHead(200, { 'content-type': 'application/x-protobuf', 'content-length': 0 }).end();
    });
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const serverSpans = (body) => {
    let count = 0;
    for (let at = body.indexOf(ROUTE_ATTRIBUTE); at !== -1; at = body.indexOf(ROUTE_ATTRIBUTE, at + 1)) count++;
    return count;
  };
  return {
    url: `http://127.0.0.1:${server.address().port}`,
    /** The counts of the bodies received since the last call. */
    take: () => {
      const counts = {
        serverSpans: bodies.reduce((total, body) => total + serverSpans(body), 0),
        bodies: bodies.length,
      };
      bodies = [];
      return counts;
    },
    close: () => new Promise((resolve) => server.close(resolve)),
  };
}

/** The requests the service answered on ROUTE, from its own metrics. */
async function answered(url, metricsToken) {
  const response = await fetch(`${url}/metrics`, { headers: { authorization: `Bearer ${metricsToken}` } });
  if (!response.ok) throw new Error(`tracing: /metrics answered ${response.status}`);
  const counts = (await response.text()).split('\n').filter((line) => line.startsWith('http_requests_total{'));
  const onRoute = counts.filter((line) => line.includes(`route="${ROUTE}"`));
  return onRoute.reduce((total, line) => total + Number(line.slice(line.lastIndexOf(' ') + 1)), 0);
}

async function measure(helpers, sink, mode, extraEnv) {
  const { start, stop, freshStore, duration, connections, token, metricsToken, seeded } = helpers;
  const store = await freshStore('sqlite');
  const server = await start('service', { ...store.env, ...extraEnv });
  try {
    await store.seed(seeded);
    sink.take(); // the start-up's probes and spans are not this run's
    let n = 0;
    const load = (seconds) =>
      loadPlants(server.url, { token, connections, duration: seconds, path: () => `/plants/${spread(n++, seeded)}` });
    await load(1); // warm-up: JIT, caches
    const cpuBefore = cpuNs(server.child.pid).all;
    const result = await load(duration);
    const cpu = cpuNs(server.child.pid).all - cpuBefore;
    if (result.errors > 0 || result.timeouts > 0 || result.non2xx > 0) {
      throw new Error(
        `tracing ${mode}: ${result.errors} errors, ${result.timeouts} timeouts, statuses ${JSON.stringify(result.statusCodeStats)}`,
      );
    }
    await new Promise((resolve) => setTimeout(resolve, 200)); // the last responses in flight
    const served = await answered(server.url, metricsToken);
    await stop(server); // SIGTERM: the service flushes its spans before it exits (a second stop is a no-op)
    const received = sink.take();
    return {
      rps: result.requests.average,
      p99: result.latency.p99,
      cpuUsPerRequest: cpu / 1000 / result.requests.total,
      load1: os.loadavg()[0],
      served,
      serverSpans: received.serverSpans,
      exports: received.bodies,
      // Every request's server span is owed at 100 %; at 10 % the sampler decides, so none is counted.
      dropped: extraEnv.OTEL_TRACES_SAMPLER === 'parentbased_always_on' ? served - received.serverSpans : undefined,
    };
  } finally {
    await stop(server);
    await store.drop();
  }
}

async function runTracingBench(helpers) {
  const sink = await startSink();
  const traced = (extra) => ({
    OTEL_EXPORTER_OTLP_ENDPOINT: sink.url,
    OTEL_EXPORTER_OTLP_PROTOCOL: 'http/protobuf',
    ...extra,
  });
  const modes = {
    off: {},
    all: traced({ OTEL_TRACES_SAMPLER: 'parentbased_always_on' }),
    tenth: traced({ OTEL_TRACES_SAMPLER: 'parentbased_traceidratio', OTEL_TRACES_SAMPLER_ARG: '0.1' }),
  };
  const rounds = [];
  try {
    for (let round = 1; round <= helpers.rounds; round++) {
      const result = {};
      for (const [mode, env] of Object.entries(modes)) result[mode] = await measure(helpers, sink, mode, env);
      const { off, all, tenth } = result;
      // Throughput, and capacity from CPU time (CPU a request off over on), against tracing off.
      result.ratios = {
        allOverOff: all.rps / off.rps,
        tenthOverOff: tenth.rps / off.rps,
        allCpuRatio: off.cpuUsPerRequest / all.cpuUsPerRequest,
        tenthCpuRatio: off.cpuUsPerRequest / tenth.cpuUsPerRequest,
      };
      rounds.push(result);
      console.log(
        `tracing round ${round}: ${off.rps.toFixed(0)} req/s off, ${result.ratios.allOverOff.toFixed(2)}× at 100 % ` +
          `(${all.serverSpans} server spans for ${all.served} requests, ${all.dropped} dropped), ` +
          `${result.ratios.tenthOverOff.toFixed(2)}× at 10 %`,
      );
    }
  } finally {
    await sink.close();
  }
  // The rounds' ratios are in each round's line above; what was dropped, in all of them together.
  const summary = { ...medians(rounds), droppedAt100: rounds.reduce((total, r) => total + r.all.dropped, 0) };
  printSummary(`tracing (SQLite, GET /plants/{id}), medians of ${rounds.length} rounds`, summary);
  return { summary, rounds };
}

module.exports = { runTracingBench, startSink };
