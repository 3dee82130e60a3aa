'use strict';
// The summaries of the scenarios that run rounds of their own (webhooks, tracing, auth failures).
const { median } = require('./lib');

/** The median over `rounds` of each number they hold, found by the same keys in each round. */
function medians(rounds) {
  const [first] = rounds;
  if (typeof first === 'number') return median(rounds);
  if (first === null || typeof first !== 'object') return first;
  const result = Array.isArray(first) ? [] : {};
  for (const key of Object.keys(first)) result[key] = medians(rounds.map((round) => round[key]));
  return result;
}

/** Prints each number of `summary` on a line of its own, named by its keys: `two.deliveredPerSecond 6172`. */
function printSummary(title, summary) {
  console.log(`\n${title}`);
  const print = (value, path) => {
    if (typeof value === 'number') console.log(`  ${path} ${Number.isInteger(value) ? value : value.toFixed(2)}`);
    else if (value !== null && typeof value === 'object') {
      for (const [key, inner] of Object.entries(value)) print(inner, path === '' ? key : `${path}.${key}`);
    }
  };
  print(summary, '');
}

module.exports = { medians, printSummary };
