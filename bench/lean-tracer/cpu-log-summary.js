'use strict';
// Reads the CPU log of a variants.js copy built with VARIANT_CPU_LOG (the request count and the process's
// CPU time in µs, every 1,000 requests) and prints the CPU per request of each phase, after the warm-up:
//
//   node bench/lean-tracer/cpu-log-summary.js FILE [--after 200000] [--block 30000] [--modes 2] [--names a,b]
//
// Request n is in phase floor(n / block) % modes. The defaults fit `alternating` (interleaved, then
// clustered); `spread` is `--modes 4 --names random,300/3000,1000/10000,3000/30000`; `clustered` with
// `--block 3000 --modes 10` puts its bursts in phase 0 and the stretches between them in 1–9. Each phase
// is also compared with phase 0 cycle by cycle ("dearer in k of n cycles").
const { median } = require('../lib');
const { phaseArguments, readLog, windowsOf } = require('./phase-windows');

const phases = phaseArguments(process.argv.slice(2));
const { modes: MODES } = phases;

const cycles = new Map(); // cycle → phase → CPU per request of its windows
for (const { a, b, requests, phase, cycle } of windowsOf(readLog(phases.file, ['n', 'cpu']), phases)) {
  if (!cycles.has(cycle))
    cycles.set(
      cycle,
      Array.from({ length: MODES }, () => []),
    );
  cycles.get(cycle)[phase].push((b.cpu - a.cpu) / requests);
}
const mean = (values) => values.reduce((sum, value) => sum + value, 0) / values.length;
const byPhase = Array.from({ length: MODES }, (_, phase) => [...cycles.values()].flatMap((values) => values[phase]));
const whole = [...cycles.values()].filter((values) => values.every((windows) => windows.length > 0));
byPhase.forEach((values, phase) => {
  const name = phases.nameOf(phase);
  const dearer = whole.filter((values) => mean(values[phase]) > mean(values[0])).length;
  console.log(
    `${name}: ${mean(values).toFixed(2)} µs CPU a request (mean of ${values.length} windows of 1,000; median ` +
      `${median(values).toFixed(2)}, ${Math.min(...values).toFixed(1)}–${Math.max(...values).toFixed(1)})` +
      (phase === 0 ? '' : `; dearer than ${phases.nameOf(0)} in ${dearer} of ${whole.length} cycles`),
  );
});
