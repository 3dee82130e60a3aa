'use strict';
// The webhook scenario of `npm run bench` (bench/README.md), on the store run.js passes in. A latency is
// answer to receipt: from the create's 200 reaching the client (its commit is just before) to its event
// reaching the receiver, a process of its own (this file, forked with --receiver).
const { randomBytes } = require('node:crypto');
const { fork } = require('node:child_process');
const { createServer } = require('node:http');
const { performance } = require('node:perf_hooks');
const { freePort, loadPlants, medians, percentile, printSummary, sleep } = require('./lib');

const PACED_SHARES = [0.5, 0.75]; // shares of the two endpoints' full-load rate, measured again paced
const STEADY_RATE = 100; // creates a second for the steady latency
// Creates a second, and one event in how many the receiver refuses once (500): the latency of the others.
const FAILING_RATE = 200;
const FAIL_EVERY = 50;
// Beside a hanging endpoint: the service's defaults, set so that the figure keeps its meaning if they
// change. A send waits 15 s, longer than the run: the hanging endpoint holds its 16 sends throughout.
const HANGING_ENV = {
  WEBHOOK_TIMEOUT_MS: '15000',
  WEBHOOK_ENDPOINT_CONCURRENCY: '16',
  WEBHOOK_CONCURRENCY: '64',
  WEBHOOK_POLL_INTERVAL_MS: '1000',
};
const SECRET = `whsec_${randomBytes(32).toString('base64')}`;
// The receivers listen on 127.0.0.1, which the service blocks by default with every special-purpose range.
const webhookEnv = (urls) => ({
  WEBHOOK_URLS: urls.join(','),
  WEBHOOK_SECRET: SECRET,
  WEBHOOK_ALLOWED_NETWORKS: '127.0.0.0/8',
});
const now = () => performance.timeOrigin + performance.now();

/** A receiver process. `failEvery`: it refuses the first attempt of every n-th event; `hang`: it never answers. */
async function startReceiver({ failEvery = 0, hang = false } = {}) {
  const child = fork(module.filename, ['--receiver', String(failEvery), hang ? 'hang' : 'answer'], {
    stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
  });
  const ask = (message) =>
    new Promise((resolve) => {
      child.once('message', resolve);
      child.send(message);
    });
  const { port } = await new Promise((resolve) => child.once('message', resolve));
  return {
    url: `http://127.0.0.1:${port}/hook`,
    distinct: async () => (await ask('count')).distinct,
    requests: async () => (await ask('count')).count,
    receivedAt: async () => new Map(Object.entries((await ask('report')).receivedAt)),
    close: () => new Promise((resolve) => child.once('exit', resolve) && child.send('stop')),
  };
}

/** Waits until `arrived()` reaches `expected` (or throws after `timeoutMs`): the drain's time, and the share at the start. */
async function untilArrived(arrived, expected, timeoutMs) {
  const stopped = performance.now();
  const atStop = await arrived();
  let count = atStop;
  while (count < expected && performance.now() - stopped < timeoutMs) {
    await sleep(10);
    count = await arrived();
  }
  if (count < expected) throw new Error(`only ${count} of ${expected} events arrived`);
  return { drainMs: performance.now() - stopped, arrivedByStop: atStop / expected };
}

/**
 * Creates at full load (or `rate` a second) with `endpoints` healthy receivers, whose deliveries are
 * awaited; or, with `dead`, one endpoint where nothing listens.
 */
async function measureCreates(helpers, { endpoints = 0, dead = false, rate = undefined } = {}) {
  const { start, stop, freshStore, duration, connections, token } = helpers;
  const receivers = [];
  for (let i = 0; i < endpoints; i++) receivers.push(await startReceiver());
  const urls = dead ? [`http://127.0.0.1:${await freePort()}/hook`] : receivers.map((receiver) => receiver.url);
  const store = await freshStore(helpers.store);
  const server = await start('service', { ...store.env, ...(urls.length > 0 ? webhookEnv(urls) : {}) });
  const answeredAt = new Map();
  let nextId = 1;
  try {
    const load = (seconds) =>
      loadPlants(server.url, {
        token,
        connections,
        duration: seconds,
        ...(rate !== undefined && { overallRate: rate }),
        body: (context) => {
          context.id = String(nextId);
          return { id: nextId++, name: 'Monstera', tag: 'tropical' };
        },
        onResponse: (_status, _body, context) => answeredAt.set(context.id, now()),
      });
    await load(1);
    const result = await load(duration);
    const measured = { rps: result.requests.average, p99: result.latency.p99, created: result['2xx'] };
    if (receivers.length === 0) return measured;
    // Every create was a 200: wait for each event at every receiver.
    const least = async () => Math.min(...(await Promise.all(receivers.map((receiver) => receiver.distinct()))));
    const { drainMs, arrivedByStop } = await untilArrived(least, nextId - 1, 60000);
    const receivedAt = await receivers[0].receivedAt();
    // The creates whose answer autocannon reported (it reuses a connection's context, so a few are not).
    const latencies = [...receivedAt]
      .filter(([id]) => answeredAt.has(id))
      .map(([id, at]) => at - answeredAt.get(id))
      .sort((a, b) => a - b);
    return {
      ...measured,
      deliveredPerSecond: (receivedAt.size * receivers.length) / (duration + 1 + drainMs / 1000),
      latencyP50Ms: percentile(latencies, 50),
      latencyP99Ms: percentile(latencies, 99),
      drainMs,
      arrivedByStop,
    };
  } finally {
    await stop(server);
    await store.drop();
    for (const receiver of receivers) await receiver.close();
  }
}

/**
 * Creates at a steady `rate` a second, each sent on its own so that its answer time is its own. With
 * `failEvery`, the events the receiver refuses once are left out (they arrive on their retry) and the
 * others measured. With `hanging`, a second endpoint, listed first, never answers (HANGING_ENV).
 */
async function measureSteady(helpers, rate = STEADY_RATE, { failEvery = 0, hanging = false } = {}) {
  const { start, stop, freshStore, duration, token } = helpers;
  const receiver = await startReceiver({ failEvery });
  const hangingReceiver = hanging ? await startReceiver({ hang: true }) : undefined;
  const store = await freshStore(helpers.store);
  const urls = hangingReceiver ? [hangingReceiver.url, receiver.url] : [receiver.url];
  const server = await start('service', { ...store.env, ...webhookEnv(urls), ...(hanging ? HANGING_ENV : {}) });
  const answeredAt = new Map();
  const pending = [];
  try {
    // At least two seconds, so that there is a second after the first one (the smoke run lasts one).
    const total = rate * Math.max(duration, 2);
    const begun = performance.now();
    for (let id = 1; id <= total; id++) {
      const wait = begun + ((id - 1) * 1000) / rate - performance.now(); // the id-th create leaves at its time
      if (wait > 0) await sleep(wait);
      const body = JSON.stringify({ id, name: 'Monstera' });
      const headers = { 'content-type': 'application/json', authorization: `Bearer ${token}` };
      const create = fetch(`${server.url}/plants`, { method: 'POST', headers, body }).then(async (res) => {
        await res.arrayBuffer();
        if (res.status === 200) answeredAt.set(String(id), now());
      });
      pending.push(create);
    }
    await Promise.all(pending);
    const answered = [...answeredAt].filter(([id]) => failEvery === 0 || Number(id) % failEvery !== 0);
    const arrived = async () => {
      const receivedAt = await receiver.receivedAt();
      return answered.filter(([id]) => receivedAt.has(id)).length;
    };
    await untilArrived(arrived, answered.length, 30000);
    const receivedAt = await receiver.receivedAt();
    // The first second after start-up apart: a cold process falls behind for a moment, then catches up.
    const latencies = (entries) => entries.map(([id, at]) => receivedAt.get(id) - at).sort((a, b) => a - b);
    const all = latencies(answered);
    const warm = latencies(answered.filter(([id]) => Number(id) > rate));
    return {
      latencyP50Ms: percentile(warm, 50),
      latencyP99Ms: percentile(warm, 99),
      firstSecondP99Ms: percentile(latencies(answered.filter(([id]) => Number(id) <= rate)), 99),
      allP99Ms: percentile(all, 99),
      withinOneSecond: all.filter((ms) => ms <= 1000).length / all.length,
      accepted: all.length,
      refused: answeredAt.size - answered.length,
      ...(hangingReceiver ? { hangingHeld: await hangingReceiver.requests() } : {}),
    };
  } finally {
    // The service first: its shutdown aborts the sends it holds; then the receivers close what is left.
    await stop(server);
    await store.drop();
    await receiver.close();
    await hangingReceiver?.close();
  }
}

/** One round: creates with the webhook off, to endpoints healthy, paced and dead; then the steady rates. */
async function round(helpers) {
  const off = await measureCreates(helpers);
  const healthy = await measureCreates(helpers, { endpoints: 1 });
  const two = await measureCreates(helpers, { endpoints: 2 });
  // Below full load: at what share of it does delivery keep up (the backlog drained as the load stops)?
  const paced = [];
  for (const share of PACED_SHARES) {
    const rate = Math.round(two.rps * share);
    paced.push({ share, rate, ...(await measureCreates(helpers, { endpoints: 2, rate })) });
  }
  const dead = await measureCreates(helpers, { dead: true });
  const steady = await measureSteady(helpers);
  // The same rate with a receiver that accepts everything: what the failing run is compared with.
  const control = await measureSteady(helpers, FAILING_RATE);
  const failing = await measureSteady(helpers, FAILING_RATE, { failEvery: FAIL_EVERY });
  // The steady rate again, beside an endpoint that never answers; timed, for what it adds to a run.
  const hangingBegun = performance.now();
  const hanging = await measureSteady(helpers, STEADY_RATE, { hanging: true });
  hanging.elapsedMs = performance.now() - hangingBegun;
  const ratios = {
    healthyOverOff: healthy.rps / off.rps,
    deadOverOff: dead.rps / off.rps,
    twoOverOff: two.rps / off.rps,
    twoDeliveredPerCreate: two.deliveredPerSecond / two.rps,
  };
  return { off, healthy, two, paced, dead, steady, control, failing, hanging, ratios };
}

async function runWebhookBench(helpers) {
  const rounds = [];
  for (let index = 1; index <= helpers.rounds; index++) {
    const result = await round(helpers);
    rounds.push(result);
    const { off, healthy, two, steady, hanging } = result;
    console.log(
      `webhook (${helpers.store}) round ${index}: creates off ${off.rps.toFixed(0)}, one endpoint ${healthy.rps.toFixed(0)}, ` +
        `two ${two.rps.toFixed(0)} req/s, ${two.deliveredPerSecond.toFixed(0)} deliveries/s; ${STEADY_RATE} creates/s: ` +
        `p99 ${steady.latencyP99Ms.toFixed(1)} ms alone, ${hanging.latencyP99Ms.toFixed(1)} ms beside a hanging endpoint ` +
        `(${hanging.hangingHeld} sends held)`,
    );
  }
  const settings = { STEADY_RATE, FAILING_RATE, FAIL_EVERY, PACED_SHARES, HANGING_ENV };
  const summary = { settings, ...medians(rounds) };
  const title = `webhook (${helpers.store}), medians of ${rounds.length} rounds (latencies: the 200 to the receipt, ms)`;
  printSummary(title, summary);
  return { summary, rounds };
}

/**
 * The receiver (its own process, so that the load generator's busy loop does not slow its answers):
 * 200 at once, noting when each plant's event first arrived (Unix ms), reported over IPC; 500 to the
 * first attempt of every `failEvery`-th plant; or, hanging, no answer at all (`count` is the requests
 * it holds) until `stop` closes them.
 */
function receive(failEvery, hang) {
  const refused = new Set();
  const receivedAt = {};
  let count = 0;
  const server = createServer((request, response) => {
    count += 1;
    if (hang) return;
    let body = '';
    request.on('data', (chunk) => (body += chunk));
    request.on('end', () => {
      const id = /"id":(-?\d+)/.exec(body)?.[1];
      if (failEvery > 0 && id !== undefined && Number(id) % failEvery === 0 && !refused.has(id)) {
        refused.add(id);
        return response.writeHead(500).end();
      }
      if (id !== undefined && receivedAt[id] === undefined) receivedAt[id] = now();
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
}

if (require.main === module && process.argv[2] === '--receiver')
  receive(Number(process.argv[3]), process.argv[4] === 'hang');

module.exports = { runWebhookBench };
