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
};

for (const [name, patches] of Object.entries(VARIANTS)) {
  const root = join(OUT, name);
  rmSync(root, { recursive: true, force: true });
  mkdirSync(root, { recursive: true });
  cpSync(DIST, join(root, 'dist'), { recursive: true });
  copyFileSync(join(DIST, '..', 'package.json'), join(root, 'package.json'));
  if (!existsSync(join(root, 'node_modules'))) symlinkSync(NODE_MODULES, join(root, 'node_modules'));
  copyFileSync(join(__dirname, 'lean.js'), join(root, 'dist', 'lean.js'));
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
