'use strict';
// The tracing scenario of `npm run bench`: creates at full load on SQLite with tracing off, and on
// at 100 % and at 10 % sampling, exporting OTLP/HTTP to a local sink that accepts everything (a collector's cost
// is not ours). Rounds alternate off and on; it reports the medians and the ratio.
const { createServer } = require('node:http');
const autocannon = require('autocannon');

async function startSink() {
  let spans = 0;
  const server = createServer((request, response) => {
    let bytes = 0;
    request.on('data', (chunk) => (bytes += chunk.length));
    request.on('end', () => {
      spans += bytes > 0 ? 1 : 0;
      response.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${server.address().port}`,
    exports: () => spans,
    close: () => new Promise((resolve) => server.close(resolve)),
  };
}

async function measure(helpers, extraEnv) {
  const { start, stop, freshStore, duration, connections, token } = helpers;
  const store = await freshStore('sqlite');
  const server = await start('service', { ...store.env, ...extraEnv });
  let nextId = 1;
  try {
    const load = (seconds) =>
      autocannon({
        url: `${server.url}/plants`,
        method: 'POST',
        connections,
        duration: seconds,
        headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
        requests: [
          {
            setupRequest: (req) => ({
              ...req,
              body: JSON.stringify({ id: nextId++, name: 'Monstera', tag: 'tropical' }),
            }),
          },
        ],
      });
    await load(1);
    const result = await load(duration);
    return { rps: result.requests.average, p99: result.latency.p99 };
  } finally {
    await stop(server);
    await store.drop();
  }
}

async function runTracingBench(helpers) {
  const sink = await startSink();
  const rounds = [];
  try {
    for (let round = 1; round <= helpers.rounds; round++) {
      const off = await measure(helpers, {});
      const on = await measure(helpers, {
        OTEL_EXPORTER_OTLP_ENDPOINT: sink.url,
        OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
        OTEL_TRACES_SAMPLER: 'always_on',
      });
      const tenth = await measure(helpers, {
        OTEL_EXPORTER_OTLP_ENDPOINT: sink.url,
        OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
        OTEL_TRACES_SAMPLER: 'traceidratio',
        OTEL_TRACES_SAMPLER_ARG: '0.1',
      });
      rounds.push({ off, on, tenth });
      console.log(
        `tracing round ${round}: creates off ${off.rps.toFixed(0)} req/s (p99 ${off.p99} ms), on ${on.rps.toFixed(0)} req/s (p99 ${on.p99} ms), ` +
          `10 % sampled ${tenth.rps.toFixed(0)} req/s (p99 ${tenth.p99} ms)`,
      );
    }
  } finally {
    await sink.close();
  }
  const pick = (f) => helpers.median(rounds.map(f));
  const summary = {
    offRps: pick((r) => r.off.rps),
    onRps: pick((r) => r.on.rps),
    onOverOff: pick((r) => r.on.rps / r.off.rps),
    p99OffMs: pick((r) => r.off.p99),
    p99OnMs: pick((r) => r.on.p99),
    tenthRps: pick((r) => r.tenth.rps),
    tenthOverOff: pick((r) => r.tenth.rps / r.off.rps),
    exportRequests: sink.exports(),
  };
  console.log(
    `\nTracing at 100 % (SQLite creates): ${summary.onRps.toFixed(0)} req/s against ${summary.offRps.toFixed(0)} off ` +
      `(${summary.onOverOff.toFixed(2)}), p99 ${summary.p99OnMs} ms against ${summary.p99OffMs} ms; ` +
      `at 10 %: ${summary.tenthRps.toFixed(0)} req/s (${summary.tenthOverOff.toFixed(2)})`,
  );
  return { summary, rounds };
}

module.exports = { runTracingBench };
