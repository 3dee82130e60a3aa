'use strict';
// Builds the lean-tracer prototype's variants (./lean.js) as copies of a built dist/, to be measured
// beside it by bench/cpu-per-request.js (bench/README.md, "eighth pass"):
//
//   node bench/lean-tracer/variants.js OUT [--dist dist] [--node-modules node_modules]
//   node bench/cpu-per-request.js --runs 3 --tracing off,0.1,1 sdk=dist eae=OUT/eae/dist lean=OUT/lean/dist ...
//
// - eae: the SDK's spans, each encoded as it ends (EncodeAtEnd) instead of the batch processor and the
//   OTLP exporter's serialiser;
// - lean: LeanProvider, small spans encoded as they end;
// - lean-close: the same, and a no-op 'close' listener on every unsampled response too, so that
//   sampled and unsampled responses carry the same listeners;
// - lean-noexport: lean, the batches encoded but never sent;
// - lean-noctx: the same, and a sampled request's context never bound (so no database span);
// - lean-allclose: lean-noctx with lean-close's listener;
// and three of the shipped build (the SDK's spans):
// - sdk-close: with lean-close's listener on every unsampled response;
// - hook-only: its onRequest hook answering at once (no sampling decision, no span);
// - no-hooks: no hook at all (the SDK and the instrumentations loaded, no server span).
// And, for the ninth pass's step (run them with `--tracing 1`: each fixes its own sampling):
// - zero, tenth: the shipped build at 0 % and at 10 %, whatever the ratio asked for;
// - interleaved: a tenth of the requests, each drawn by Math.random() ahead of the sampler;
// - clustered: the same tenth in bursts: 3,000 requests sampled in every 30,000;
// - alternating: interleaved for 30,000 requests, clustered for the next 30,000, and so on;
// - alternating-noexport: alternating, its batches handed to an exporter that answers at once (no
//   serialisation, no HTTP): the spans wait for their batch as shipped;
// - spread: a tenth sampled at random for 30,000 requests, then in bursts of 300 in 3,000, then 1,000 in
//   10,000, then 3,000 in 30,000, and again;
// - hold, hold-all: a tenth sampled at random (hold) or all (hold-all), their spans never exported, only
//   kept after they end in a buffer emptied at once, every 300 ms or every 30 ms, in turns of 30,000
//   requests (`hold.js`);
// - batches, batches-tenth: all sampled (batches) or a tenth at random, exported in batches of 2,048 and of
//   256 spans in turns of 30,000 requests (`batches.js`);
// - als: the shipped build with an AsyncLocalStorage entered before it starts (Node 20's hooks on).
// Built with VARIANT_CPU_LOG=<file> in the environment, the copies that decide their own sampling (interleaved,
// clustered, alternating and the rest below `tenth` but `als`) append the process's CPU time every 1,000 requests to <file>; `node bench/lean-tracer/cpu-log-summary.js <file>`
// reads it.
// Built with VARIANT_PHASE_LOG=<file> instead, they log more every 1,000 requests (the main thread's CPU, the
// GC's work, the old space, page faults: `phase-log.js`), and with VARIANT_PROFILE=<from>,<to> as well,
// profile the main thread between those requests; `phase-profile.js` reads both.
// The copies are patched as text, and each patch is checked to apply: rebuild them after `nest build`.
// --node-modules: the tree the copies run with (one built for BENCH_NODE's Node, for another Node).
const {
  cpSync,
  copyFileSync,
  existsSync,
  mkdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} = require('node:fs');
const { join, resolve } = require('node:path');

const args = process.argv.slice(2);
const option = (name, fallback) => (args.includes(name) ? args[args.indexOf(name) + 1] : fallback);
const OUT = args[0];
if (!OUT || OUT.startsWith('--'))
  throw new Error('usage: node bench/lean-tracer/variants.js OUT [--dist dist] [--node-modules node_modules]');
const DIST = resolve(option('--dist', 'dist'));
const NODE_MODULES = resolve(option('--node-modules', 'node_modules'));

const RESOURCE =
  'defaultResource().merge(detectResources({ detectors: [envDetector, hostDetector, processDetector] }))';
const URL_OF_ENV =
  "(process.env.OTEL_EXPORTER_OTLP_ENDPOINT || 'http://127.0.0.1:4318').replace(/\\/$/, '') + '/v1/traces'";
const leanProvider = (send) => ({
  file: 'tracing.js',
  from: / {4}provider = new NodeTracerProvider\(\{[\s\S]*?provider\.register\(\);/,
  to:
    `    provider = new (require('./lean').LeanProvider)({ resource: ${RESOURCE}, sampler: sampling.sampler, ` +
    `idGenerator: sampling, url: ${URL_OF_ENV}, tally: trace_context_1.spanTally, send: ${send} });\n` +
    '    provider.register();',
});
const noContext = [
  { file: 'platform/request-spans.js', from: 'request[CONTEXT] = active;', to: 'void active;' },
  { file: 'platform/request-spans.js', from: 'api_1.context.with(active, done);', to: 'done();' },
];
const closeOnEveryResponse = {
  file: 'platform/request-spans.js',
  from: '        if (span === undefined)\n            return done();',
  to: "        if (span === undefined) {\n            reply.raw.once('close', () => undefined);\n            return done();\n        }",
};
/** Batches of 2,048 and of 256 spans in turns (`batches.js`), on the exporter the variables ask for. */
const alternatingBatches = {
  file: 'tracing.js',
  from: 'spanProcessors: [spanProcessorFromEnv(exporterFromEnv(process.env), process.env, trace_context_1.spanTally)],',
  to:
    "spanProcessors: [((exporter) => new (require('./batches').AlternatingBatches)((size) => " +
    'spanProcessorFromEnv(exporter, { ...process.env, OTEL_BSP_MAX_EXPORT_BATCH_SIZE: String(size) }, ' +
    'trace_context_1.spanTally)))(exporterFromEnv(process.env))],',
};
/** The shipped build, sampling `ratio` of the requests whatever OTEL_TRACES_SAMPLER_ARG says. */
function samplingRatio(ratio) {
  return {
    file: 'tracing.js',
    from: '"use strict";\n',
    to: `"use strict";\nprocess.env.OTEL_TRACES_SAMPLER_ARG = '${ratio}';\n`,
  };
}
/**
 * The server span's decision dropping the requests for which `drop` is true (this.n counts them) ahead
 * of the sampler (run at 1); with VARIANT_CPU_LOG set when the copies are built, logging the process's
 * CPU time every 1,000 requests to that file.
 */
function sampleOwn(drop) {
  const log = process.env.VARIANT_CPU_LOG;
  const phaseLog = process.env.VARIANT_PHASE_LOG;
  const range = process.env.VARIANT_PROFILE
    ? JSON.stringify(process.env.VARIANT_PROFILE.split(',').map((n) => Number.parseInt(n, 10)))
    : 'undefined';
  const logging = phaseLog
    ? '        if (this.n % 1000 === 0)\n' +
      `            require(${JSON.stringify(join(__dirname, 'phase-log.js'))}).tick(${JSON.stringify(resolve(phaseLog))}, this.n, ${range});\n`
    : log
      ? '        if (this.n % 1000 === 0) {\n' +
        '            const { user, system } = process.cpuUsage();\n' +
        `            require('node:fs').appendFileSync(${JSON.stringify(resolve(log))}, \`\${this.n} \${user + system}\\n\`);\n` +
        '        }\n'
      : '';
  return {
    file: 'platform/sampling-first.js',
    from: 'startSpan(tracer, name, kind, parent) {\n',
    to:
      'startSpan(tracer, name, kind, parent) {\n' +
      '        this.n = (this.n | 0) + 1;\n' +
      '        globalThis.variantRequests = this.n;\n' +
      logging +
      `        if (${drop}) return undefined;\n`,
  };
}
const VARIANTS = {
  'sdk-close': [closeOnEveryResponse],
  'hook-only': [
    {
      file: 'platform/request-spans.js',
      from: "fastify.addHook('onRequest', (request, reply, done) => {\n",
      to: "fastify.addHook('onRequest', (request, reply, done) => {\n        return done();\n",
    },
  ],
  'no-hooks': [
    {
      file: 'tracing.js',
      from: "(0, node_diagnostics_channel_1.subscribe)('fastify.initialization', (message) => traceRequests(message.fastify, tracer, sampling));",
      to: 'void traceRequests;',
    },
  ],
  eae: [
    {
      file: 'tracing.js',
      from: 'spanProcessors: [spanProcessorFromEnv(exporterFromEnv(process.env), process.env, trace_context_1.spanTally)],',
      to: `spanProcessors: [new (require('./lean').EncodeAtEnd)(${RESOURCE}, ${URL_OF_ENV}, {}, trace_context_1.spanTally)],`,
    },
  ],
  lean: [leanProvider(true)],
  'lean-close': [leanProvider(true), closeOnEveryResponse],
  'lean-noexport': [leanProvider(false)],
  'lean-noctx': [leanProvider(false), ...noContext],
  'lean-allclose': [leanProvider(false), ...noContext, closeOnEveryResponse],
  zero: [samplingRatio(0)],
  tenth: [samplingRatio(0.1)],
  interleaved: [sampleOwn('Math.random() >= 0.1')],
  clustered: [sampleOwn('this.n % 30000 >= 3000')],
  alternating: [sampleOwn('(this.n % 60000 < 30000 ? Math.random() >= 0.1 : this.n % 30000 >= 3000)')],
  'alternating-noexport': [
    sampleOwn('(this.n % 60000 < 30000 ? Math.random() >= 0.1 : this.n % 30000 >= 3000)'),
    {
      file: 'tracing.js',
      from: 'spanProcessorFromEnv(exporterFromEnv(process.env), process.env, trace_context_1.spanTally)',
      to:
        'spanProcessorFromEnv({ export: (spans, done) => done({ code: 0 }), shutdown: async () => undefined, ' +
        'forceFlush: async () => undefined }, process.env, trace_context_1.spanTally)',
    },
  ],
  spread: [
    sampleOwn(
      '[Math.random() >= 0.1, this.n % 3000 >= 300, this.n % 10000 >= 1000, this.n % 30000 >= 3000][Math.floor(this.n / 30000) % 4]',
    ),
  ],
  hold: [
    sampleOwn('Math.random() >= 0.1'),
    {
      file: 'tracing.js',
      from: 'spanProcessors: [spanProcessorFromEnv(exporterFromEnv(process.env), process.env, trace_context_1.spanTally)],',
      to: "spanProcessors: [new (require('./hold').HoldProcessor)()],",
    },
  ],
  'hold-all': [
    sampleOwn('false'),
    {
      file: 'tracing.js',
      from: 'spanProcessors: [spanProcessorFromEnv(exporterFromEnv(process.env), process.env, trace_context_1.spanTally)],',
      to: "spanProcessors: [new (require('./hold').HoldProcessor)()],",
    },
  ],
  batches: [sampleOwn('false'), alternatingBatches],
  'batches-tenth': [sampleOwn('Math.random() >= 0.1'), alternatingBatches],
  als: [
    {
      file: 'main.js',
      from: '"use strict";\n',
      to: `"use strict";\nrequire(${JSON.stringify(resolve(__dirname, '..', 'async-local-storage-on.js'))});\n`,
    },
  ],
};

for (const [name, patches] of Object.entries(VARIANTS)) {
  const root = join(OUT, name);
  rmSync(root, { recursive: true, force: true });
  mkdirSync(root, { recursive: true });
  cpSync(DIST, join(root, 'dist'), { recursive: true });
  copyFileSync(join(DIST, '..', 'package.json'), join(root, 'package.json'));
  if (!existsSync(join(root, 'node_modules'))) symlinkSync(NODE_MODULES, join(root, 'node_modules'));
  copyFileSync(join(__dirname, 'lean.js'), join(root, 'dist', 'lean.js'));
  copyFileSync(join(__dirname, 'hold.js'), join(root, 'dist', 'hold.js'));
  copyFileSync(join(__dirname, 'batches.js'), join(root, 'dist', 'batches.js'));
  for (const { file, from, to } of patches) {
    const path = join(root, 'dist', file);
    const text = readFileSync(path, 'utf8');
    const patched = text.replace(from, () => to);
    if (patched === text)
      throw new Error(`${name}: ${file} does not hold ${from} (rebuild dist, or update this patch)`);
    writeFileSync(path, patched);
  }
  console.log(`${name}: ${join(root, 'dist')}`);
}
