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
const { readFileSync } = require('node:fs');
const { median } = require('../lib');

const args = process.argv.slice(2);
const option = (name, fallback) => (args.includes(name) ? args[args.indexOf(name) + 1] : fallback);
const AFTER = Number(option('--after', 200000));
const BLOCK = Number(option('--block', 30000));
const MODES = Number(option('--modes', 2));
const NAMES = option('--names', '').split(',').filter(Boolean);

const rows = readFileSync(args[0], 'utf8')
  .trim()
  .split('\n')
  .map((line) => line.split(' ').map(Number));
const cycles = new Map(); // cycle → phase → CPU per request of its windows
for (let i = 1; i < rows.length; i++) {
  const [n, cpu] = rows[i - 1];
  const [next, nextCpu] = rows[i];
  if (n < AFTER) continue;
  const phase = Math.floor(n / BLOCK) % MODES;
  const perRequest = (nextCpu - cpu) / (next - n);
  const cycle = Math.floor(n / (BLOCK * MODES));
  if (!cycles.has(cycle))
    cycles.set(
      cycle,
      Array.from({ length: MODES }, () => []),
    );
  cycles.get(cycle)[phase].push(perRequest);
}
const mean = (values) => values.reduce((sum, value) => sum + value, 0) / values.length;
const phases = Array.from({ length: MODES }, (_, phase) => [...cycles.values()].flatMap((byPhase) => byPhase[phase]));
const whole = [...cycles.values()].filter((byPhase) => byPhase.every((values) => values.length > 0));
phases.forEach((values, phase) => {
  const name = NAMES[phase] ?? `phase ${phase}`;
  const dearer = whole.filter((byPhase) => mean(byPhase[phase]) > mean(byPhase[0])).length;
  console.log(
    `${name}: ${mean(values).toFixed(2)} µs CPU a request (mean of ${values.length} windows of 1,000; median ` +
      `${median(values).toFixed(2)}, ${Math.min(...values).toFixed(1)}–${Math.max(...values).toFixed(1)})` +
      (phase === 0 ? '' : `; dearer than ${NAMES[0] ?? 'phase 0'} in ${dearer} of ${whole.length} cycles`),
  );
});
