'use strict';
// The tracing scenario of `npm run bench` (`--only tracing`, bench/README.md). Dropped spans: the server
// spans of ROUTE the sink decoded after the service's SIGTERM (it flushes), against the requests its
// own `http_requests_total` counted on that route.
const { createServer } = require('node:http');
const os = require('node:os');
const autocannon = require('autocannon');
const { cpuNs, spread } = require('./lib');

const ROUTE = '/plants/:id';
const SERVER = 2; // SPAN_KIND_SERVER in OTLP

/**
 * An OTLP/HTTP (protobuf) receiver that counts the server spans of ROUTE, and every span. It keeps the
 * bodies and decodes them when asked (`take`, after the load): decoding during it would take the CPU of
 * this process, which is also the load generator's. It answers as a collector that took all of it does,
 * with an empty ExportTraceServiceResponse (a JSON `{}` made the exporter warn on every batch).
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
  return {
    url: `http://127.0.0.1:${server.address().port}`,
    /** The counts of the bodies received since the last call. */
    take: () => {
      const counts = { serverSpans: 0, spans: 0, bodies: bodies.length, unparsable: 0 };
      for (const body of bodies) {
        try {
          for (const span of spansOfProtobuf(body)) {
            counts.spans++;
            if (span.kind === SERVER && span.route === ROUTE) counts.serverSpans++;
          }
        } catch {
          counts.unparsable++;
        }
      }
      bodies = [];
      return counts;
    },
    close: () => new Promise((resolve) => server.close(resolve)),
  };
}

/**
 * The kind and `http.route` of each span of an OTLP protobuf export request: ExportTraceServiceRequest
 * resource_spans (1) → ResourceSpans scope_spans (2) → ScopeSpans spans (2) → Span kind (6, varint),
 * attributes (9) → KeyValue key (1), value (2) → AnyValue string_value (1).
 */
function spansOfProtobuf(body) {
  const spans = [];
  for (const resource of fields(body, 1)) {
    for (const scope of fields(resource, 2)) {
      for (const span of fields(scope, 2)) {
        let kind;
        let route;
        for (const [field, value] of message(span)) {
          if (field === 6) kind = value;
          else if (field === 9) {
            const pair = new Map(message(value));
            if (pair.get(1)?.toString('utf8') === 'http.route')
              route = new Map(message(pair.get(2))).get(1)?.toString('utf8');
          }
        }
        spans.push({ kind, route });
      }
    }
  }
  return spans;
}

/** The length-delimited fields numbered `number` of a protobuf message. */
function fields(buffer, number) {
  return message(buffer)
    .filter(([field, value]) => field === number && Buffer.isBuffer(value))
    .map(([, value]) => value);
}

/** A protobuf message's fields as [number, value]: a number for varints, a Buffer for the rest. */
function message(buffer) {
  const out = [];
  let at = 0;
  const varint = () => {
    let value = 0;
    for (let shift = 1; ; shift *= 128) {
      const byte = buffer[at++];
      if (byte === undefined) throw new Error('truncated');
      value += (byte & 0x7f) * shift;
      if (byte < 0x80) return value;
    }
  };
  while (at < buffer.length) {
    const tag = varint();
    const type = tag % 8;
    const field = Math.floor(tag / 8);
    if (type === 0) out.push([field, varint()]);
    else if (type === 1 || type === 5) {
      const size = type === 1 ? 8 : 4;
      out.push([field, buffer.subarray(at, at + size)]);
      at += size;
    } else if (type === 2) {
      const length = varint();
      out.push([field, buffer.subarray(at, at + length)]);
      at += length;
    } else throw new Error(`wire type ${type}`);
  }
  return out;
}

/** The requests the service answered on ROUTE, from its own metrics. */
async function answered(url, metricsToken) {
  const response = await fetch(`${url}/metrics`, { headers: { authorization: `Bearer ${metricsToken}` } });
  if (!response.ok) throw new Error(`tracing: /metrics answered ${response.status}`);
  const text = await response.text();
  let total = 0;
  for (const line of text.split('\n')) {
    if (line.startsWith('http_requests_total{') && line.includes(`route="${ROUTE}"`)) {
      total += Number(line.slice(line.lastIndexOf(' ') + 1));
    }
  }
  return total;
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
      autocannon({
        url: `${server.url}/plants`,
        method: 'GET',
        connections,
        duration: seconds,
        headers: { authorization: `Bearer ${token}` },
        requests: [{ setupRequest: (req) => ({ ...req, path: `/plants/${spread(n++, seeded)}` }) }],
      });
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
      spans: received.spans,
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
      rounds.push(result);
      const { off, all, tenth } = result;
      const line = (r) =>
        `${r.rps.toFixed(0)} req/s (p99 ${r.p99} ms, ${r.cpuUsPerRequest.toFixed(0)} µs CPU/request, load ${r.load1.toFixed(1)})`;
      const spans = (r) =>
        `${r.serverSpans} server spans for ${r.served} requests` +
        (r.dropped === undefined ? '' : ` (${r.dropped} dropped)`);
      console.log(
        `tracing round ${round}: reads off ${line(off)}; at 100 % ${line(all)}, ${spans(all)}; ` +
          `at 10 % ${line(tenth)}, ${spans(tenth)}`,
      );
    }
  } finally {
    await sink.close();
  }
  const pick = (f) => helpers.median(rounds.map(f));
  const sum = (f) => rounds.reduce((total, r) => total + f(r), 0);
  const range = (f) => [Math.min(...rounds.map(f)), Math.max(...rounds.map(f))];
  const summary = {
    offRps: pick((r) => r.off.rps),
    allRps: pick((r) => r.all.rps),
    tenthRps: pick((r) => r.tenth.rps),
    allOverOff: pick((r) => r.all.rps / r.off.rps),
    tenthOverOff: pick((r) => r.tenth.rps / r.off.rps),
    allOverOffSpread: range((r) => r.all.rps / r.off.rps),
    tenthOverOffSpread: range((r) => r.tenth.rps / r.off.rps),
    // Capacity from CPU time: CPU per request off over CPU per request on.
    allCpuRatio: pick((r) => r.off.cpuUsPerRequest / r.all.cpuUsPerRequest),
    tenthCpuRatio: pick((r) => r.off.cpuUsPerRequest / r.tenth.cpuUsPerRequest),
    p99OffMs: pick((r) => r.off.p99),
    p99AllMs: pick((r) => r.all.p99),
    p99TenthMs: pick((r) => r.tenth.p99),
    servedAt100: sum((r) => r.all.served),
    serverSpansAt100: sum((r) => r.all.serverSpans),
    droppedAt100: sum((r) => r.all.dropped),
    servedAt10: sum((r) => r.tenth.served),
    serverSpansAt10: sum((r) => r.tenth.serverSpans),
  };
  console.log(
    `\nTracing (SQLite reads, GET /plants/{id}): off ${summary.offRps.toFixed(0)} req/s (p99 ${summary.p99OffMs} ms); ` +
      `at 100 % ${summary.allRps.toFixed(0)} req/s, ${summary.allOverOff.toFixed(2)}× ` +
      `(rounds ${summary.allOverOffSpread.map((x) => x.toFixed(2)).join('–')}; CPU/request ${summary.allCpuRatio.toFixed(2)}×), p99 ${summary.p99AllMs} ms; ` +
      `at 10 % ${summary.tenthRps.toFixed(0)} req/s, ${summary.tenthOverOff.toFixed(2)}× ` +
      `(rounds ${summary.tenthOverOffSpread.map((x) => x.toFixed(2)).join('–')}; CPU/request ${summary.tenthCpuRatio.toFixed(2)}×), p99 ${summary.p99TenthMs} ms.\n` +
      `Spans at 100 %: ${summary.serverSpansAt100} server spans received for ${summary.servedAt100} requests answered, ` +
      `${summary.droppedAt100} dropped; at 10 %: ${summary.serverSpansAt10} for ${summary.servedAt10} ` +
      `(${((100 * summary.serverSpansAt10) / Math.max(1, summary.servedAt10)).toFixed(1)} %).`,
  );
  return { summary, rounds };
}

module.exports = { runTracingBench, startSink };
