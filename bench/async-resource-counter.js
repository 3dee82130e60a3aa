'use strict';
// Preloaded (`node --require bench/async-resource-counter.js …`) by `bench/allocation.js --async-resources` into the
// process it measures. The first SIGUSR2 starts counting the async resources the process makes
// (promises, ticks, timers, sockets…) with an async_hooks init hook, as an AsyncLocalStorage on Node 20
// installs one (with it on, V8 also makes the promise each `await` would otherwise skip, and tracing
// pays the hook on every resource), by type and the two nearest frames of our code or a package's;
// the second stops and writes them to SAMPLER_OUT.
const { createHook } = require('node:async_hooks');
const { renameSync, writeFileSync } = require('node:fs');

const out = process.env.SAMPLER_OUT;
const byCreator = new Map();
const byType = new Map();
let total = 0;
let counting = false;

const hook = createHook({
  init(_id, type) {
    total += 1;
    byType.set(type, (byType.get(type) ?? 0) + 1);
    const trace = {};
    Error.captureStackTrace(trace, hook.init);
    const frames = trace.stack
      .split('\n')
      .slice(1)
      .map((line) => line.trim().replace(/^at /, ''))
      .filter((line) => !line.includes('node:internal') && !line.includes('async-resource-counter.js'))
      .slice(0, 2)
      .map((line) => line.replace(/\(?\/.*node_modules\//, '(').replace(/\(?\/.*?\/dist\//, '(dist/'));
    const key = `${type} ${frames.join(' < ') || '(no frame)'}`;
    byCreator.set(key, (byCreator.get(key) ?? 0) + 1);
  },
});

process.on('SIGUSR2', () => {
  if (!counting) {
    counting = true;
    total = 0;
    byCreator.clear();
    byType.clear();
    hook.enable();
    return;
  }
  counting = false;
  hook.disable();
  const creators = [...byCreator].sort((a, b) => b[1] - a[1]);
  writeFileSync(`${out}.partial`, JSON.stringify({ total, types: [...byType], creators }));
  renameSync(`${out}.partial`, out);
});
