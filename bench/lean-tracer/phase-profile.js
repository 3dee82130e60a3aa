'use strict';
// Reads the log of a variants.js copy built with VARIANT_PHASE_LOG (phase-log.js) and, if there is one, its
// CPU profile (VARIANT_PROFILE), and prints by phase, after the warm-up: the CPU a request (the process, the
// main thread), the GC's work, the old space's growth, page faults, and from the profile the functions whose
// time a request differs most from phase 0's:
//
//   node bench/lean-tracer/phase-profile.js FILE [--after 200000] [--block 30000] [--modes 2] [--names a,b] [--top 25]
//
// Phases as in cpu-log-summary.js (request n is in phase floor(n / block) % modes). The CPU of windows
// the profile covered includes the profiler's cost (phase-log.js): for CPU, compare runs without one.
const { existsSync, readFileSync } = require('node:fs');
const { phaseArguments, readLog, windowsOf } = require('./phase-windows');

const phases = phaseArguments(process.argv.slice(2));
const { file: FILE, after: AFTER, modes: MODES, nameOf } = phases;
const TOP = Number(phases.option('--top', 25));

/** The log's columns (phase-log.js). */
const FIELDS = [
  'n',
  'cpu',
  'main',
  'now',
  'minor',
  'minorMs',
  'major',
  'majorMs',
  'incr',
  'incrMs',
  'old',
  'faults',
  'voluntary',
  'involuntary',
];
/** Summed over a phase's windows as their change from a to b: every column but the request count and the old space. */
const COUNTED = FIELDS.filter((field) => field !== 'n' && field !== 'old');
const rows = readLog(FILE, FIELDS);
const windows = windowsOf(rows, phases);

const sums = Array.from({ length: MODES }, () => ({
  requests: 0,
  oldGrowth: 0,
  oldRequests: 0,
  ...Object.fromEntries(COUNTED.map((key) => [key, 0])),
}));
for (const { a, b, phase, requests } of windows) {
  const s = sums[phase];
  s.requests += requests;
  for (const key of COUNTED) s[key] += b[key] - a[key];
  // Without a mark-compact, counted or not yet reported (its entry may come a window late: the old space fell).
  if (b.major === a.major && b.old >= a.old) {
    s.oldGrowth += b.old - a.old;
    s.oldRequests += requests;
  }
}
console.log('by phase, a request (after', AFTER, 'requests):');
sums.forEach((s, phase) => {
  const per = (value) => value / s.requests;
  console.log(
    `  ${nameOf(phase)} (${s.requests} requests): CPU ${per(s.cpu).toFixed(2)} µs, main thread ` +
      `${rows[0].main < 0 ? 'n/a' : per(s.main).toFixed(2)} µs, wall ${per(s.now).toFixed(2)} µs; ` +
      `scavenges ${(per(s.minor) * 1000).toFixed(2)} a 1,000 requests, ${(per(s.minorMs) * 1000).toFixed(2)} µs; ` +
      `mark-compacts ${s.major} (${(per(s.majorMs) * 1000).toFixed(2)} µs), incremental ${s.incr} ` +
      `(${(per(s.incrMs) * 1000).toFixed(2)} µs); old space +${(s.oldGrowth / s.oldRequests).toFixed(0)} B ` +
      `(windows where it did not shrink); minor faults ${per(s.faults).toFixed(3)}; context switches ` +
      (Number.isNaN(s.voluntary)
        ? 'n/a (a log without them)'
        : `${per(s.voluntary).toFixed(3)} voluntary, ${per(s.involuntary).toFixed(3)} involuntary`),
  );
});

const profileFile = `${FILE}.cpuprofile`;
if (!existsSync(profileFile)) process.exit(0);
const profile = JSON.parse(readFileSync(profileFile, 'utf8'));
const profiled = windows.filter(({ a, b }) => a.now >= profile.startTime && b.now <= profile.endTime);
console.log(`  (${profiled.length} of ${windows.length} windows ran under the profiler: their CPU includes its cost)`);
const frameOf = new Map();
for (const node of profile.nodes) {
  const { functionName, url, lineNumber } = node.callFrame;
  const file = url.replace(/^.*\/(node_modules|dist)\//, '$1/').replace(/^node:/, '');
  frameOf.set(node.id, `${functionName || '(anonymous)'} ${file}:${lineNumber + 1}`);
}
// Each sample's time: the profile's start plus the deltas; its weight: the time until the next sample (so a
// gap, the thread descheduled or the sampler late, is credited to the sample before it).
const times = [];
let t = profile.startTime;
for (const delta of profile.timeDeltas) times.push((t += delta));
const byPhase = Array.from({ length: MODES }, () => ({ requests: 0, time: new Map(), total: 0 }));
let w = 0;
for (const win of profiled) byPhase[win.phase].requests += win.requests;
for (let i = 0; i + 1 < times.length; i++) {
  while (w < profiled.length && profiled[w].b.now <= times[i]) w++;
  if (w >= profiled.length) break;
  if (times[i] < profiled[w].a.now) continue;
  const phase = byPhase[profiled[w].phase];
  const weight = times[i + 1] - times[i];
  const frame = frameOf.get(profile.samples[i]);
  phase.time.set(frame, (phase.time.get(frame) ?? 0) + weight);
  if (!frame.startsWith('(idle)')) phase.total += weight;
}
console.log('\nthe profile (main thread, sampled), µs a request by self time:');
byPhase.forEach((p, phase) =>
  console.log(
    `  ${nameOf(phase)} (${p.requests} requests): busy ${(p.total / p.requests).toFixed(2)}, idle ` +
      `${((p.time.get([...p.time.keys()].find((k) => k.startsWith('(idle)'))) ?? 0) / p.requests).toFixed(2)}`,
  ),
);
for (let phase = 1; phase < MODES; phase++) {
  const [base, other] = [byPhase[0], byPhase[phase]];
  const frames = new Set([...base.time.keys(), ...other.time.keys()]);
  const rowsOf = [...frames]
    .filter((frame) => !frame.startsWith('(idle)'))
    .map((frame) => {
      const x = (base.time.get(frame) ?? 0) / base.requests;
      const y = (other.time.get(frame) ?? 0) / other.requests;
      return { frame, x, y, d: x - y };
    })
    .sort((p, q) => Math.abs(q.d) - Math.abs(p.d))
    .slice(0, TOP);
  console.log(`\n${nameOf(0)} against ${nameOf(phase)}, the ${TOP} largest differences (µs a request):`);
  for (const { frame, x, y, d } of rowsOf)
    console.log(`  ${d >= 0 ? '+' : ''}${d.toFixed(3)}  ${x.toFixed(3)} / ${y.toFixed(3)}  ${frame}`);
}
