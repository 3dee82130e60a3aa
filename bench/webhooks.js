'use strict';
// The webhook scenario of `npm run bench` (bench/README.md), on the store run.js passes in. Answer to
// receipt: from the create's 200 reaching the client (the commit is just before it) to its event
// reaching the receiver, a process of its own (bench/webhook-receiver.js).
const { randomBytes } = require('node:crypto');
const { fork } = require('node:child_process');
const { join } = require('node:path');
const { performance } = require('node:perf_hooks');
const autocannon = require('autocannon');
const { freePort, percentile } = require('./lib');

// Shares of the two-endpoint full-load create rate at which delivery is measured again, paced.
const PACED_SHARES = [0.5, 0.75];
// Creates per second for the steady-load latency.
const STEADY_RATE = 100;
// Creates per second, and one event in how many the receiver refuses once (500), for the latency of
// the events it accepts beside the ones it refuses.
const FAILING_RATE = 200;
const FAIL_EVERY = 50;
// The endpoint beside a hanging one (measureSteady's `hanging`): the service's defaults, set here so
// that the figure keeps its meaning if they change. A send waits 15 s for its answer, longer than the
// run (the hanging endpoint holds its 16 sends in flight throughout; nothing times out), 64 sends in
// flight per instance, the outbox polled every second beside the wake-up each create's commit gives.
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

/**
 * The subscriber (bench/webhook-receiver.js) in a child process; `ask` sends it a message and awaits
 * the answer. `failEvery`: it refuses the first attempt of every n-th event; `hang`: it never answers.
 */
async function startReceiver({ failEvery = 0, hang = false } = {}) {
  const child = fork(join(__dirname, 'webhook-receiver.js'), {
    stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
    env: { ...process.env, BENCH_FAIL_EVERY: String(failEvery), BENCH_HANG: hang ? '1' : '0' },
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

/**
 * Creates at full load (or at `rate` per second) with `webhookUrls` as the endpoints; `receivers` are
 * the healthy ones among them, whose deliveries are awaited.
 */
async function measureCreates(helpers, webhookUrls = [], receivers = [], rate = undefined) {
  const { start, stop, freshStore, duration, connections, token } = helpers;
  const store = await freshStore(helpers.store);
  const server = await start(
    'service',
    webhookUrls.length > 0 ? { ...store.env, ...webhookEnv(webhookUrls) } : store.env,
  );
  // When the 200 of each create reached the client: the commit was just before it.
  const answeredAt = new Map();
  let nextId = 1;
  try {
    const load = (seconds) =>
      autocannon({
        url: `${server.url}/plants`,
        method: 'POST',
        connections,
        duration: seconds,
        ...(rate === undefined ? {} : { overallRate: rate }),
        headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
        requests: [
          {
            setupRequest: (req, context) => {
              const id = nextId++;
              context.id = String(id);
              return { ...req, body: JSON.stringify({ id, name: 'Monstera', tag: 'tropical' }) };
            },
            onResponse: (_status, _body, context) => {
              answeredAt.set(context.id, performance.timeOrigin + performance.now());
            },
          },
        ],
      });
    await load(1);
    const result = await load(duration);
    const created = result['2xx'] + 0;
    let drainMs;
    let delivered = 0;
    let latencies = [];
    // The share of the events every receiver had when the load stopped (1: delivery kept up).
    let arrivedByStop;
    if (receivers.length > 0) {
      // Every create of the warm-up and the run was a 200; wait until each event has arrived at every receiver.
      const stopped = performance.now();
      const expected = nextId - 1;
      const least = async () => Math.min(...(await Promise.all(receivers.map((receiver) => receiver.distinct()))));
      let distinct = await least();
      arrivedByStop = distinct / expected;
      while (distinct < expected && performance.now() - stopped < 60000) {
        await new Promise((resolve) => setTimeout(resolve, 10));
        distinct = await least();
      }
      drainMs = performance.now() - stopped;
      if (distinct < expected) throw new Error(`only ${distinct} of ${expected} events arrived`);
      const receivedAt = await receivers[0].receivedAt();
      // Negative when the event reached the receiver before the 200 reached the client.
      // Only the creates whose answer autocannon reported (it reuses a connection's context, so a few are not).
      latencies = [...receivedAt]
        .filter(([id]) => answeredAt.has(id))
        .map(([id, at]) => at - answeredAt.get(id))
        .sort((a, b) => a - b);
      delivered = receivedAt.size * receivers.length;
    }
    return {
      rps: result.requests.average,
      p99: result.latency.p99,
      created,
      ...(receivers.length > 0
        ? {
            deliveredPerSecond: delivered / (duration + 1 + drainMs / 1000),
            latencyP50Ms: percentile(latencies, 50),
            latencyP99Ms: percentile(latencies, 99),
            drainMs,
            arrivedByStop,
          }
        : {}),
    };
  } finally {
    await stop(server);
    await store.drop();
  }
}

/**
 * Creates at a steady `rate` per second (a load the service keeps up with), each sent on its own
 * with fetch so its answer time is its own: how soon after the 200 does its event arrive? With
 * `failEvery`, the receiver refuses (500) the first attempt of every `failEvery`-th event; those are
 * left out (they arrive on their retry, 5 s later by the default schedule) and the others measured.
 * With `hanging`, a second endpoint, listed first, never answers (HANGING_ENV): the receiver's events
 * are measured beside it, and `hangingHeld` says how many sends it held.
 */
async function measureSteady(helpers, rate = STEADY_RATE, { failEvery = 0, hanging = false } = {}) {
  const { start, stop, freshStore, duration, token } = helpers;
  const receiver = await startReceiver({ failEvery });
  const hangingReceiver = hanging ? await startReceiver({ hang: true }) : undefined;
  const store = await freshStore(helpers.store);
  const server = await start('service', {
    ...store.env,
    ...(hangingReceiver
      ? { ...webhookEnv([hangingReceiver.url, receiver.url]), ...HANGING_ENV }
      : webhookEnv([receiver.url])),
  });
  const answeredAt = new Map();
  const pending = [];
  const accepted = (id) => failEvery === 0 || Number(id) % failEvery !== 0;
  try {
    // At least two seconds, so that there is a second after the first one to report (the smoke run lasts one).
    const total = rate * Math.max(duration, 2);
    const begun = performance.now();
    for (let id = 1; id <= total; id++) {
      // The id-th create leaves at its place in the schedule.
      const due = begun + ((id - 1) * 1000) / rate;
      if (due > performance.now()) await new Promise((resolve) => setTimeout(resolve, due - performance.now()));
      pending.push(
        fetch(`${server.url}/plants`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
          body: JSON.stringify({ id, name: 'Monstera' }),
        }).then(async (res) => {
          await res.arrayBuffer();
          if (res.status === 200) answeredAt.set(String(id), performance.timeOrigin + performance.now());
        }),
      );
    }
    await Promise.all(pending);
    const stopped = performance.now();
    const expected = [...answeredAt.keys()].filter(accepted);
    const arrivedCount = async () => {
      const receivedAt = await receiver.receivedAt();
      return expected.filter((id) => receivedAt.has(id)).length;
    };
    while ((await arrivedCount()) < expected.length && performance.now() - stopped < 30000) {
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    const receivedAt = await receiver.receivedAt();
    const arrived = [...answeredAt].filter(([id]) => accepted(id) && receivedAt.has(id));
    if (arrived.length < expected.length)
      throw new Error(`only ${arrived.length} of ${expected.length} events arrived`);
    // The first second after start-up apart: a cold process (code not yet optimised, the pool and
    // the receiver's connections still opening) falls behind for a moment, then catches up.
    const latenciesOf = (entries) => entries.map(([id, at]) => receivedAt.get(id) - at).sort((a, b) => a - b);
    const all = latenciesOf(arrived);
    const warm = latenciesOf(arrived.filter(([id]) => Number(id) > rate));
    const cold = latenciesOf(arrived.filter(([id]) => Number(id) <= rate));
    return {
      latencyP50Ms: percentile(warm, 50),
      latencyP99Ms: percentile(warm, 99),
      firstSecondP99Ms: percentile(cold, 99),
      allP99Ms: percentile(all, 99),
      withinOneSecond: all.filter((ms) => ms <= 1000).length / all.length,
      accepted: all.length,
      refused: answeredAt.size - expected.length,
      ...(hangingReceiver ? { hangingHeld: await hangingReceiver.requests() } : {}),
    };
  } finally {
    // The service first: its shutdown aborts the sends it holds; then the receiver closes what is left.
    await stop(server);
    await store.drop();
    await receiver.close();
    await hangingReceiver?.close();
  }
}

/** `measureCreates` with `count` healthy endpoints, each a fresh receiver (they count the distinct ids they have seen). */
async function measureWithReceivers(helpers, count, rate = undefined) {
  const receivers = [];
  for (let i = 0; i < count; i++) receivers.push(await startReceiver());
  try {
    return await measureCreates(
      helpers,
      receivers.map((receiver) => receiver.url),
      receivers,
      rate,
    );
  } finally {
    for (const receiver of receivers) await receiver.close();
  }
}

async function runWebhookBench(helpers) {
  const rounds = [];
  for (let round = 1; round <= helpers.rounds; round++) {
    const off = await measureCreates(helpers);
    const healthy = await measureWithReceivers(helpers, 1);
    const two = await measureWithReceivers(helpers, 2);
    // Below full load: at what share of it does delivery keep up (the backlog drained as the load stops)?
    const paced = [];
    for (const share of PACED_SHARES) {
      const rate = Math.round(two.rps * share);
      paced.push({ share, rate, ...(await measureWithReceivers(helpers, 2, rate)) });
    }
    // A port on 127.0.0.1 where nothing listens.
    const dead = await measureCreates(helpers, [`http://127.0.0.1:${await freePort()}/hook`]);
    const steady = await measureSteady(helpers);
    // The same rate with a receiver that accepts everything: what the failing run is compared with.
    const control = await measureSteady(helpers, FAILING_RATE);
    const failing = await measureSteady(helpers, FAILING_RATE, { failEvery: FAIL_EVERY });
    // The steady rate again, beside an endpoint that never answers; timed, for what it adds to a run.
    const hangingBegun = performance.now();
    const hanging = await measureSteady(helpers, STEADY_RATE, { hanging: true });
    hanging.elapsedMs = performance.now() - hangingBegun;
    rounds.push({ off, healthy, two, paced, dead, steady, control, failing, hanging });
    console.log(
      `webhook (${helpers.store}) round ${round}: creates off ${off.rps.toFixed(0)}, healthy ${healthy.rps.toFixed(0)}, dead ${dead.rps.toFixed(0)} req/s; ` +
        `answer-to-receipt p50 ${healthy.latencyP50Ms.toFixed(1)} ms, p99 ${healthy.latencyP99Ms.toFixed(1)} ms, drained in ${healthy.drainMs.toFixed(0)} ms; ` +
        `two endpoints: creates ${two.rps.toFixed(0)} req/s, delivered ${two.deliveredPerSecond.toFixed(0)} events/s, drained in ${two.drainMs.toFixed(0)} ms`,
    );
    console.log(
      `webhook (${helpers.store}) round ${round}, ${STEADY_RATE} creates/s: p99 ${steady.latencyP99Ms.toFixed(1)} ms alone, ` +
        `${hanging.latencyP99Ms.toFixed(1)} ms beside a hanging endpoint (${(hanging.withinOneSecond * 100).toFixed(1)} % within 1 s, ` +
        `${hanging.hangingHeld} sends held, ${(hanging.elapsedMs / 1000).toFixed(1)} s)`,
    );
  }
  const pick = (f) => helpers.median(rounds.map(f));
  const summary = {
    createsOffRps: pick((r) => r.off.rps),
    createsHealthyRps: pick((r) => r.healthy.rps),
    createsDeadRps: pick((r) => r.dead.rps),
    healthyOverOff: pick((r) => r.healthy.rps / r.off.rps),
    deadOverOff: pick((r) => r.dead.rps / r.off.rps),
    p99OffMs: pick((r) => r.off.p99),
    p99HealthyMs: pick((r) => r.healthy.p99),
    p99DeadMs: pick((r) => r.dead.p99),
    deliveredPerSecond: pick((r) => r.healthy.deliveredPerSecond),
    answerToReceiptP50Ms: pick((r) => r.healthy.latencyP50Ms),
    answerToReceiptP99Ms: pick((r) => r.healthy.latencyP99Ms),
    drainMs: pick((r) => r.healthy.drainMs),
    createsTwoEndpointsRps: pick((r) => r.two.rps),
    twoEndpointsDeliveredPerSecond: pick((r) => r.two.deliveredPerSecond),
    twoEndpointsDeliveredOverCreated: pick((r) => r.two.deliveredPerSecond / (2 * r.two.rps)),
    twoEndpointsDrainMs: pick((r) => r.two.drainMs),
    twoEndpointsArrivedByStop: pick((r) => r.two.arrivedByStop),
    twoEndpointsAnswerToReceiptP99Ms: pick((r) => r.two.latencyP99Ms),
    twoEndpointsPaced: PACED_SHARES.map((share, i) => ({
      share,
      rate: pick((r) => r.paced[i].rate),
      arrivedByStop: pick((r) => r.paced[i].arrivedByStop),
      answerToReceiptP99Ms: pick((r) => r.paced[i].latencyP99Ms),
      drainMs: pick((r) => r.paced[i].drainMs),
    })),
    steadyRate: STEADY_RATE,
    steadySendToReceiptP50Ms: pick((r) => r.steady.latencyP50Ms),
    steadySendToReceiptP99Ms: pick((r) => r.steady.latencyP99Ms),
    steadyFirstSecondP99Ms: pick((r) => r.steady.firstSecondP99Ms),
    steadyWithinOneSecond: pick((r) => r.steady.withinOneSecond),
    besideHangingP50Ms: pick((r) => r.hanging.latencyP50Ms),
    besideHangingP99Ms: pick((r) => r.hanging.latencyP99Ms),
    besideHangingFirstSecondP99Ms: pick((r) => r.hanging.firstSecondP99Ms),
    besideHangingWithinOneSecond: pick((r) => r.hanging.withinOneSecond),
    besideHangingHeldSends: pick((r) => r.hanging.hangingHeld),
    besideHangingElapsedMs: pick((r) => r.hanging.elapsedMs),
    besideHangingSettings: HANGING_ENV,
    failingRate: FAILING_RATE,
    failingEvery: FAIL_EVERY,
    failingAcceptedWithinOneSecond: pick((r) => r.failing.withinOneSecond),
    failingAcceptedP50Ms: pick((r) => r.failing.latencyP50Ms),
    failingAcceptedP99Ms: pick((r) => r.failing.latencyP99Ms),
    failingAcceptedAllP99Ms: pick((r) => r.failing.allP99Ms),
    noFailuresWithinOneSecond: pick((r) => r.control.withinOneSecond),
    noFailuresP99Ms: pick((r) => r.control.allP99Ms),
  };
  console.log(`\n| webhook (${helpers.store}) | creates req/s | ratio to off | create p99 ms |`);
  console.log('|---|---|---|---|');
  console.log(`| off | ${summary.createsOffRps.toFixed(0)} | 1.00 | ${summary.p99OffMs} |`);
  console.log(
    `| on, healthy receiver | ${summary.createsHealthyRps.toFixed(0)} | ${summary.healthyOverOff.toFixed(2)} | ${summary.p99HealthyMs} |`,
  );
  console.log(
    `| on, two healthy endpoints | ${summary.createsTwoEndpointsRps.toFixed(0)} | ${(summary.createsTwoEndpointsRps / summary.createsOffRps).toFixed(2)} | – |`,
  );
  console.log(
    `| on, dead subscriber | ${summary.createsDeadRps.toFixed(0)} | ${summary.deadOverOff.toFixed(2)} | ${summary.p99DeadMs} |`,
  );
  console.log(
    `Delivered ${summary.deliveredPerSecond.toFixed(0)} events/s; 200 received to event received p50 ${summary.answerToReceiptP50Ms.toFixed(1)} ms, ` +
      `p99 ${summary.answerToReceiptP99Ms.toFixed(1)} ms; backlog drained ${summary.drainMs.toFixed(0)} ms after the load stopped`,
  );
  console.log(
    `Two healthy endpoints: ${summary.createsTwoEndpointsRps.toFixed(0)} creates/s, ${summary.twoEndpointsDeliveredPerSecond.toFixed(0)} deliveries/s ` +
      `(${summary.twoEndpointsDeliveredOverCreated.toFixed(2)} of 2 per create per second, load and drain included), ` +
      `answer-to-receipt p99 ${summary.twoEndpointsAnswerToReceiptP99Ms.toFixed(1)} ms; ${(summary.twoEndpointsArrivedByStop * 100).toFixed(1)} % of the events had reached both when the load stopped, the backlog drained ${summary.twoEndpointsDrainMs.toFixed(0)} ms after`,
  );
  for (const paced of summary.twoEndpointsPaced) {
    console.log(
      `Two healthy endpoints at ${paced.rate} creates/s (${paced.share * 100} % of full load): ` +
        `${(paced.arrivedByStop * 100).toFixed(1)} % of the events had reached both when the load stopped, answer-to-receipt p99 ${paced.answerToReceiptP99Ms.toFixed(1)} ms; the backlog drained ${paced.drainMs.toFixed(0)} ms after`,
    );
  }
  console.log(
    `At a steady ${STEADY_RATE} creates/s: 200 received to event received p50 ${summary.steadySendToReceiptP50Ms.toFixed(1)} ms, ` +
      `p99 ${summary.steadySendToReceiptP99Ms.toFixed(1)} ms after the first second (in the first second after start-up: ` +
      `p99 ${summary.steadyFirstSecondP99Ms.toFixed(1)} ms); ${(summary.steadyWithinOneSecond * 100).toFixed(1)} % within 1 s`,
  );
  console.log(
    `At a steady ${STEADY_RATE} creates/s beside an endpoint that never answers (it held ${summary.besideHangingHeldSends} sends; ` +
      `WEBHOOK_TIMEOUT_MS ${HANGING_ENV.WEBHOOK_TIMEOUT_MS}): the healthy endpoint's 200 received to event received ` +
      `p50 ${summary.besideHangingP50Ms.toFixed(1)} ms, p99 ${summary.besideHangingP99Ms.toFixed(1)} ms after the first second ` +
      `(first second p99 ${summary.besideHangingFirstSecondP99Ms.toFixed(1)} ms); ` +
      `${(summary.besideHangingWithinOneSecond * 100).toFixed(1)} % within 1 s; the scenario took ${(summary.besideHangingElapsedMs / 1000).toFixed(1)} s`,
  );
  console.log(
    `At a steady ${FAILING_RATE} creates/s, the receiver refusing (500) 1 event in ${FAIL_EVERY}: of the events it accepts, ` +
      `${(summary.failingAcceptedWithinOneSecond * 100).toFixed(1)} % arrived within 1 s of their 200 ` +
      `(p99 ${summary.failingAcceptedAllP99Ms.toFixed(1)} ms, first second included); after the first second ` +
      `p50 ${summary.failingAcceptedP50Ms.toFixed(1)} ms, p99 ${summary.failingAcceptedP99Ms.toFixed(1)} ms. ` +
      `With no failures at that rate: ${(summary.noFailuresWithinOneSecond * 100).toFixed(1)} % within 1 s, p99 ${summary.noFailuresP99Ms.toFixed(1)} ms`,
  );
  return { summary, rounds };
}

module.exports = { runWebhookBench };
