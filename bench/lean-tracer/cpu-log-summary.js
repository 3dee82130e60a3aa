'use strict';
// Reads the CPU log of variants.js's interleaved, clustered or alternating copy (VARIANT_CPU_LOG: the
// request count and the process's CPU time in µs, every 1,000 requests) and prints the CPU per request
// of each phase, after the warm-up:
//
//   node bench/lean-tracer/cpu-log-summary.js FILE [--after 200000] [--cycle 60000] [--split 30000]
//
// With the defaults (the alternating copy), requests [0, 30,000) of each 60,000 are the interleaved
// phase and [30,000, 60,000) the clustered one. For the clustered copy, `--cycle 30000 --split 3000`
// separates its sampled bursts from the stretches between them.
const { readFileSync } = require('node:fs');

const args = process.argv.slice(2);
const option = (name, fallback) => Number(args.includes(name) ? args[args.indexOf(name) + 1] : fallback);
const AFTER = option('--after', 200000);
const CYCLE = option('--cycle', 60000);
const SPLIT = option('--split', 30000);

const rows = readFileSync(args[0], 'utf8')
  .trim()
  .split('\n')
  .map((line) => line.split(' ').map(Number));
const phases = { first: [], second: [] };
for (let i = 1; i < rows.length; i++) {
  const [n, cpu] = rows[i - 1];
  const [next, nextCpu] = rows[i];
  if (n < AFTER) continue;
  phases[n % CYCLE < SPLIT ? 'first' : 'second'].push((nextCpu - cpu) / (next - n));
}
const mean = (values) => values.reduce((sum, value) => sum + value, 0) / values.length;
const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
for (const [name, values] of Object.entries(phases)) {
  const range = `${Math.min(...values).toFixed(1)}–${Math.max(...values).toFixed(1)}`;
  console.log(
    `requests [${name === 'first' ? `0, ${SPLIT}` : `${SPLIT}, ${CYCLE}`}) of each ${CYCLE}: ` +
      `${mean(values).toFixed(2)} µs CPU a request (mean of ${values.length} windows of 1,000; median ` +
      `${median(values).toFixed(2)}, ${range})`,
  );
}
