'use strict';
// Summarises a V8 CPU profile (`node --cpu-prof`): the share of the busy time (idle left out) by
// where the code lives (a package of node_modules, our dist/, Node's internals, GC, native), and the
// functions with the most self time. With --window, only the samples inside the measured load
// (the window file that `BENCH_TRACING_PROFILE` writes beside each profile), without start-up and shutdown.
//
//   node bench/cpu-profile-summary.js <file.cpuprofile> [--window window-<pid>.json] [--top 25]
const { readFileSync } = require('node:fs');

const args = process.argv.slice(2);
const file = args[0];
const top = args.includes('--top') ? Number(args[args.indexOf('--top') + 1]) : 25;
const profile = JSON.parse(readFileSync(file, 'utf8'));
const window = args.includes('--window')
  ? JSON.parse(readFileSync(args[args.indexOf('--window') + 1], 'utf8'))
  : { start: -Infinity, end: Infinity };

function where(frame) {
  const { url, functionName } = frame;
  if (!url) return `(${functionName || 'native'})`.replace(/^\(\((.*)\)\)$/, '($1)');
  const modules = url.lastIndexOf('node_modules/');
  if (modules !== -1) {
    const parts = url.slice(modules + 'node_modules/'.length).split('/');
    return parts[0].startsWith('@') ? `${parts[0]}/${parts[1]}` : parts[0];
  }
  if (url.startsWith('node:')) return `node:${url.slice(5).split('/')[0]}`;
  const dist = url.indexOf('/dist/');
  if (dist !== -1) return `dist/${url.slice(dist + 6).split('/')[0]}`;
  return url;
}

// Self time per node: the samples that landed on it, weighted by their time deltas.
const self = new Map();
let at = profile.startTime;
let span = 0;
for (let i = 0; i < profile.samples.length; i++) {
  at += profile.timeDeltas[i] ?? 0;
  if (at < window.start || at > window.end) continue;
  const id = profile.samples[i];
  self.set(id, (self.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0));
  span += profile.timeDeltas[i] ?? 0;
}
const byPlace = new Map();
const byFunction = new Map();
let busy = 0;
for (const node of profile.nodes) {
  const us = self.get(node.id) ?? 0;
  if (us === 0 || node.callFrame.functionName === '(idle)') continue;
  busy += us;
  const place = where(node.callFrame);
  byPlace.set(place, (byPlace.get(place) ?? 0) + us);
  const { functionName, url, lineNumber } = node.callFrame;
  const name = `${functionName || '(anonymous)'} ${place}${url ? `:${lineNumber + 1}` : ''}`;
  byFunction.set(name, (byFunction.get(name) ?? 0) + us);
}
const share = (us) => `${((100 * us) / busy).toFixed(1).padStart(5)} %`;
const sorted = (map) => [...map.entries()].sort((a, b) => b[1] - a[1]);
console.log(`busy ${(busy / 1e6).toFixed(2)} s of ${(span / 1e6).toFixed(2)} s`);
console.log('\nby place');
for (const [place, us] of sorted(byPlace).slice(0, top)) console.log(`${share(us)}  ${place}`);
console.log('\nby function (self time)');
for (const [name, us] of sorted(byFunction).slice(0, top)) console.log(`${share(us)}  ${name}`);
