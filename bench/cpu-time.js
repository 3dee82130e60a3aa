'use strict';
// CPU time of another process, for the bench scripts that compare CPU per request (a measure the
// machine's load moves less than throughput).
const { readdirSync, readFileSync } = require('node:fs');

/** Nanoseconds the process has spent on a CPU so far, all its threads. */
function cpuNs(pid) {
  let total = 0;
  for (const task of readdirSync(`/proc/${pid}/task`)) {
    try {
      total += Number(readFileSync(`/proc/${pid}/task/${task}/schedstat`, 'utf8').split(' ')[0]);
    } catch {
      // a thread that ended between the listing and the read
    }
  }
  return total;
}

module.exports = { cpuNs };
