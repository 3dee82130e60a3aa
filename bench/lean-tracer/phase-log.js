'use strict';
// What the process did in each window of 1,000 requests, for the ninth pass's step (bench/README.md):
// required by a variants.js copy built with VARIANT_PHASE_LOG=<file>, whose sampling decision calls
// `tick(n)` every 1,000 requests. Each line of <file> holds, space-separated:
//   n, the process's CPU µs (user + system, all threads), the main thread's CPU µs (Node 23.9+; -1
//   before), the monotonic clock in µs, scavenges and their ms, mark-compacts and their ms, the starts
//   of incremental marking (one for each mark-compact) and their ms (perf_hooks' GC entries: pauses on
//   the main thread only, without the marking steps and the helper threads' concurrent work; they
//   arrive a little late, so one may fall in the next window), old space used bytes, minor page faults,
//   the main thread's voluntary and involuntary context switches (a voluntary one is mostly the event
//   loop finding nothing to do and sleeping; an involuntary one, the thread preempted).
// With VARIANT_PROFILE=<from>,<to> also set at build time, a CPU profile of the main thread (V8's
// sampling profiler, asked for a sample every 200 µs; a busy 2-core machine gave one every ~360) from
// request <from> to request <to>, written to <file>.cpuprofile; `phase-profile.js` splits it by phase.
// The profiler costs: its sampling thread's CPU is in the process's column, and the main thread is
// slower while it runs. Compare CPU between runs without it; use it for where the time goes.
const { appendFileSync, readFileSync, writeFileSync } = require('node:fs');
const { PerformanceObserver, constants } = require('node:perf_hooks');
const v8 = require('node:v8');

const gc = { minor: 0, minorMs: 0, major: 0, majorMs: 0, incremental: 0, incrementalMs: 0 };
const GC_KINDS = {
  [constants.NODE_PERFORMANCE_GC_MINOR]: 'minor',
  [constants.NODE_PERFORMANCE_GC_MAJOR]: 'major',
  [constants.NODE_PERFORMANCE_GC_INCREMENTAL]: 'incremental',
};
new PerformanceObserver((list) => {
  for (const entry of list.getEntries()) {
    const kind = GC_KINDS[entry.detail?.kind ?? entry.kind];
    if (kind === undefined) continue;
    gc[kind] += 1;
    gc[`${kind}Ms`] += entry.duration;
  }
}).observe({ entryTypes: ['gc'] });

const oldSpace = () =>
  v8.getHeapSpaceStatistics().find((space) => space.space_name === 'old_space')?.space_used_size ?? -1;

let session;
/** Starts the profiler at request `from` (before that window's readings, so that it is profiled whole). */
function startProfile(n, from) {
  if (n !== from) return;
  const { Session } = require('node:inspector');
  session = new Session();
  session.connect();
  session.post('Profiler.enable');
  session.post('Profiler.setSamplingInterval', { interval: 200 });
  session.post('Profiler.start');
}

/** Stops it at request `to` (after that window's readings) and writes the profile. */
function stopProfile(file, n, to) {
  if (n === to && session !== undefined) {
    session.post('Profiler.stop', (error, result) => {
      if (error === null) writeFileSync(`${file}.cpuprofile`, JSON.stringify(result.profile));
      session.disconnect();
      session = undefined;
    });
  }
}

function tick(file, n, profileRange) {
  if (profileRange !== undefined) startProfile(n, profileRange[0]);
  const { user, system } = process.cpuUsage();
  const thread = typeof process.threadCpuUsage === 'function' ? process.threadCpuUsage() : undefined;
  const main = thread === undefined ? -1 : thread.user + thread.system;
  const now = Number(process.hrtime.bigint() / 1000n);
  const faults = process.resourceUsage().minorPageFault;
  const status = readFileSync(`/proc/self/task/${process.pid}/status`, 'utf8');
  const switches = (kind) => Number(new RegExp(`^${kind}_ctxt_switches:\\s*(\\d+)`, 'm').exec(status)?.[1] ?? -1);
  appendFileSync(
    file,
    `${n} ${user + system} ${main} ${now} ${gc.minor} ${gc.minorMs.toFixed(3)} ${gc.major} ${gc.majorMs.toFixed(3)} ` +
      `${gc.incremental} ${gc.incrementalMs.toFixed(3)} ${oldSpace()} ${faults} ` +
      `${switches('voluntary')} ${switches('nonvoluntary')}\n`,
  );
  if (profileRange !== undefined) stopProfile(file, n, profileRange[1]);
}

module.exports = { tick };
