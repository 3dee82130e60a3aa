'use strict';
// CPU time of another process, for the bench scripts that compare CPU per request (a measure the
// machine's load moves less than throughput).
const { readdirSync, readFileSync } = require('node:fs');

/** Nanoseconds the process has spent on a CPU so far: all its threads, and its main thread alone. */
function cpuNsByThread(pid) {
  let all = 0;
  let main = 0;
  for (const task of readdirSync(`/proc/${pid}/task`)) {
    try {
      const ns = Number(readFileSync(`/proc/${pid}/task/${task}/schedstat`, 'utf8').split(' ')[0]);
      all += ns;
      if (task === String(pid)) main = ns;
    } catch {
      // a thread that ended between the listing and the read
    }
  }
  return { all, main };
}

/** Nanoseconds the process has spent on a CPU so far, all its threads. */
const cpuNs = (pid) => cpuNsByThread(pid).all;

module.exports = { cpuNs, cpuNsByThread };
