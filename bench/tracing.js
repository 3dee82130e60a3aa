'use strict';
// The tracing scenario of `npm run bench` (`--only tracing`): `GET /plants/{id}` on a seeded SQLite
// store, the same build with tracing off, on at 100 % sampling and on at 10 %
// (`parentbased_traceidratio`, 0.1), exporting OTLP/HTTP with the service's default protocol
// (protobuf; BENCH_TRACING_PROTOCOL=http/json for JSON) to a local sink that accepts everything (a
// collector's cost is not ours). Each round runs the three in turn; it reports the medians of the
// per-round ratios of req/s, and of the service's CPU time per request (steadier on a shared machine).
//
// No span may be lost: after each traced run the service is stopped with SIGTERM (it flushes), and the
// server spans of `GET /plants/{id}` the sink received (decoded from the OTLP bodies) are compared
// with the requests the service answered on that route (its own `http_requests_total`, scraped before
// the SIGTERM). The difference is the dropped-span count.
const { createServer } = require('node:http');
const os = require('node:os');
const autocannon = require('autocannon');
const { cpuNs } = require('./cpu-time');

const ROUTE = '/plants/:id';
const SERVER = 2; // SPAN_KIND_SERVER in OTLP

/**
 * An OTLP/HTTP receiver (protobuf or JSON) that counts the server spans of ROUTE, and every span. It
 * keeps the bodies and decodes them when asked (`take`, after the load): decoding tens of thousands of
 * spans a second would take the CPU of this process, which is also the load generator's.
 */
async function startSink() {
  let bodies = [];
  const server = createServer((request, response) => {
    const chunks = [];
    request.on('data', (chunk) => chunks.push(chunk));
    request.on('end', () => {
      bodies.push({ json: isJson(request), body: Buffer.concat(chunks) });
      acceptExport(request, response);
    });
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${server.address().port}`,
    /** The counts of the bodies received since the last call. */
    take: () => {
      const counts = { serverSpans: 0, spans: 0, bodies: bodies.length, unparsable: 0 };
      for (const { json, body } of bodies) {
        try {
          for (const span of json ? spansOfJson(body) : spansOfProtobuf(body)) {
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

function isJson(request) {
  return String(request.headers['content-type']).includes('json');
}

/**
 * Answers an OTLP/HTTP export as a collector that took all of it does: an empty
 * ExportTraceServiceResponse in the request's own encoding. (A JSON `{}` to a protobuf export made the
 * exporter log a warning for every batch: "could not deserialize response".)
 */
function acceptExport(request, response) {
  if (isJson(request)) response.writeHead(200, { 'content-type': 'application/json' }).end('{}');
  else response.writeHead(200, { 'content-type': 'application/x-protobuf', 'content-length': 0 }).end();
}

/** The kind and `http.route` of each span of an OTLP JSON export request. */
function spansOfJson(body) {
  const spans = [];
  for (const resource of JSON.parse(body.toString('utf8')).resourceSpans ?? []) {
    for (const scope of resource.scopeSpans ?? []) {
      for (const span of scope.spans ?? []) {
        const route = span.attributes?.find((attribute) => attribute.key === 'http.route')?.value?.stringValue;
        spans.push({ kind: span.kind, route });
      }
    }
  }
  return spans;
}

/**
 * The same from an OTLP protobuf export request, read field by field: ExportTraceServiceRequest
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
async function answered(url, token) {
  const response = await fetch(`${url}/metrics`, { headers: { authorization: `Bearer ${token}` } });
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
  const { start, stop, freshStore, duration, connections, token, seeded } = helpers;
  const store = await freshStore('sqlite');
  const server = await start('service', { ...store.env, ...extraEnv });
  let stopped = false;
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
        // A different id on every request, spread over the whole seeded store.
        requests: [{ setupRequest: (req) => ({ ...req, path: `/plants/${((n++ * 7919) % seeded) + 1}` }) }],
      });
    await load(1); // warm-up: JIT, caches
    const cpuBefore = cpuNs(server.child.pid);
    const result = await load(duration);
    const cpu = cpuNs(server.child.pid) - cpuBefore;
    if (result.errors > 0 || result.timeouts > 0 || result.non2xx > 0) {
      throw new Error(
        `tracing ${mode}: ${result.errors} errors, ${result.timeouts} timeouts, statuses ${JSON.stringify(result.statusCodeStats)}`,
      );
    }
    await new Promise((resolve) => setTimeout(resolve, 200)); // the last responses in flight
    const served = await answered(server.url, token);
    await stop(server); // SIGTERM: the service flushes its spans before it exits
    stopped = true;
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
    if (!stopped) await stop(server);
    await store.drop();
  }
}

async function runTracingBench(helpers) {
  const sink = await startSink();
  const traced = (extra) => ({
    OTEL_EXPORTER_OTLP_ENDPOINT: sink.url,
    OTEL_EXPORTER_OTLP_PROTOCOL: process.env.BENCH_TRACING_PROTOCOL || 'http/protobuf',
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
  const summary = {
    offRps: pick((r) => r.off.rps),
    allRps: pick((r) => r.all.rps),
    tenthRps: pick((r) => r.tenth.rps),
    allOverOff: pick((r) => r.all.rps / r.off.rps),
    tenthOverOff: pick((r) => r.tenth.rps / r.off.rps),
    allOverOffSpread: [
      Math.min(...rounds.map((r) => r.all.rps / r.off.rps)),
      Math.max(...rounds.map((r) => r.all.rps / r.off.rps)),
    ],
    tenthOverOffSpread: [
      Math.min(...rounds.map((r) => r.tenth.rps / r.off.rps)),
      Math.max(...rounds.map((r) => r.tenth.rps / r.off.rps)),
    ],
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

module.exports = { acceptExport, runTracingBench, startSink };
