'use strict';
// A webhook subscriber for the bench, in a process of its own (so the load generator's busy event
// loop does not slow its answers): answers 200 at once, notes when each plant's first event arrived
// (Unix ms, sub-millisecond), and reports to its parent over IPC. With BENCH_FAIL_EVERY=n it answers
// 500 to the first attempt of every n-th plant (its event counts as arrived when a retry is accepted).
// With BENCH_HANG=1 it accepts every connection and request and never answers: each send waits for
// the service's timeout; `count` is the requests it holds. At `stop` it closes them, so that the
// bench does not wait on them.
const { createServer } = require('node:http');
const { performance } = require('node:perf_hooks');

const failEvery = Number(process.env.BENCH_FAIL_EVERY ?? 0);
const hang = process.env.BENCH_HANG === '1';
const refused = new Set();
const receivedAt = {};
let count = 0;
const server = createServer((request, response) => {
  if (hang) {
    count += 1;
    return;
  }
  let body = '';
  request.on('data', (chunk) => (body += chunk));
  request.on('end', () => {
    count += 1;
    const id = /"id":(-?\d+)/.exec(body)?.[1];
    if (failEvery > 0 && id !== undefined && Number(id) % failEvery === 0 && !refused.has(id)) {
      refused.add(id);
      response.writeHead(500).end();
      return;
    }
    if (id !== undefined && receivedAt[id] === undefined) receivedAt[id] = performance.timeOrigin + performance.now();
    response.writeHead(200).end();
  });
});
server.listen(0, '127.0.0.1', () => process.send({ port: server.address().port }));
process.on('message', (message) => {
  if (message === 'count') process.send({ count, distinct: Object.keys(receivedAt).length });
  if (message === 'report') process.send({ receivedAt });
  if (message === 'stop') {
    server.close(() => process.exit(0));
    server.closeAllConnections();
  }
});
