'use strict';
// What cpu-log-summary.js and phase-profile.js share: their arguments, a variants.js log read into rows,
// and the log cut into windows of 1,000 requests, each with its phase and cycle. Request n is in phase
// floor(n / block) % modes, and in cycle floor(n / (block × modes)).
const { readFileSync } = require('node:fs');

/** FILE [--after 200000] [--block 30000] [--modes 2] [--names a,b], and `option` for a script's own. */
function phaseArguments(args) {
  const option = (name, fallback) => (args.includes(name) ? args[args.indexOf(name) + 1] : fallback);
  const names = option('--names', '').split(',').filter(Boolean);
  return {
    file: args[0],
    after: Number(option('--after', 200000)),
    block: Number(option('--block', 30000)),
    modes: Number(option('--modes', 2)),
    names,
    nameOf: (phase) => names[phase] ?? `phase ${phase}`,
    option,
  };
}

/** The log's lines as rows, their space-separated columns named by `fields` in order. */
function readLog(file, fields) {
  return readFileSync(file, 'utf8')
    .trim()
    .split('\n')
    .map((line) => Object.fromEntries(line.split(' ').map((value, i) => [fields[i], Number(value)])));
}

/** Each pair of consecutive rows from request `after` on: { a, b, requests, phase, cycle }. */
function windowsOf(rows, { after, block, modes }) {
  const windows = [];
  for (let i = 1; i < rows.length; i++) {
    const [a, b] = [rows[i - 1], rows[i]];
    if (a.n < after) continue;
    windows.push({
      a,
      b,
      requests: b.n - a.n,
      phase: Math.floor(a.n / block) % modes,
      cycle: Math.floor(a.n / (block * modes)),
    });
  }
  return windows;
}

module.exports = { phaseArguments, readLog, windowsOf };
