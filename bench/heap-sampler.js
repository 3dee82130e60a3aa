'use strict';
// Preloaded (`node --require bench/heap-sampler.js …`) by bench/allocation.js into the process it
// measures. The first SIGUSR2 starts V8's sampling heap profiler, keeping the objects garbage
// collection has already freed (so the profile counts what was allocated, not what is still alive);
// the second stops it and writes the profile to SAMPLER_OUT (written whole, then renamed).
const { Session } = require('node:inspector');
const { renameSync, writeFileSync } = require('node:fs');

const out = process.env.SAMPLER_OUT;
const session = new Session();
session.connect();
let sampling = false;

process.on('SIGUSR2', () => {
  if (!sampling) {
    sampling = true;
    session.post('HeapProfiler.startSampling', {
      samplingInterval: 512,
      includeObjectsCollectedByMajorGC: true,
      includeObjectsCollectedByMinorGC: true,
    });
    return;
  }
  sampling = false;
  session.post('HeapProfiler.stopSampling', (error, result) => {
    if (error) throw error;
    writeFileSync(`${out}.partial`, JSON.stringify(result.profile));
    renameSync(`${out}.partial`, out);
  });
});
