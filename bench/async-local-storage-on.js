'use strict';
// Preloaded (`--env name:NODE_OPTIONS=--require bench/async-local-storage-on.js`, with
// bench/fastpaths-callgrind.js) into a service run without tracing: enables an AsyncLocalStorage the way
// OpenTelemetry's context manager does at the first sampled request, so the hooks Node 20 then runs on
// every async resource of every request are measured alone (Node 24+ runs none: AsyncContextFrame).
const { AsyncLocalStorage } = require('node:async_hooks');

new AsyncLocalStorage().enterWith({});
