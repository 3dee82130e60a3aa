'use strict';
// npm run bench -- --soak: memory over 300,000 creates on each store (bench/README.md).
const { loadPlants, rssMiB } = require('./lib');

const WARM = 30_000;
const TOTAL = 300_000;
const GROWTH_LIMIT = 1.1;
const PEAK_BUDGET_MIB = 160;

async function soakStore(store, { start, stop, freshStore, connections, token }) {
  const fresh = await freshStore(store);
  const server = await start('service', fresh.env);
  let nextId = 1;
  const creates = (amount) =>
    loadPlants(server.url, { token, connections, amount, body: () => ({ id: nextId++, name: 'Soak', tag: 'long' }) });
  // The resident set every second, to tell a steady climb from a spike.
  const samplesMiB = [];
  const sampler = setInterval(() => samplesMiB.push(Math.round(rssMiB(server.child.pid).current)), 1000);
  try {
    const results = [await creates(WARM)];
    const afterWarm = rssMiB(server.child.pid);
    results.push(await creates(TOTAL - WARM));
    const afterAll = rssMiB(server.child.pid);
    const failed = results.reduce((total, result) => total + result.non2xx + result.errors, 0);
    const growth = afterAll.current / afterWarm.current;
    const pass = failed === 0 && growth <= GROWTH_LIMIT && afterAll.peak <= PEAK_BUDGET_MIB;
    console.log(
      `soak (${store}): RSS ${afterWarm.current.toFixed(1)} MiB after ${WARM} creates, ` +
        `${afterAll.current.toFixed(1)} MiB after ${TOTAL} (${((growth - 1) * 100).toFixed(1)} %, limit +10 %); ` +
        `peak ${afterAll.peak.toFixed(1)} MiB (budget ${PEAK_BUDGET_MIB}); ${failed} failed: ${pass ? 'PASS' : 'FAIL'}\n` +
        `  RSS each second (MiB): ${samplesMiB.join(' ')}`,
    );
    const [afterWarmMiB, afterAllMiB, peakMiB] = [afterWarm.current, afterAll.current, afterAll.peak];
    return { store, samplesMiB, afterWarmMiB, afterAllMiB, peakMiB, growth, failed, pass };
  } finally {
    clearInterval(sampler);
    await stop(server);
    await fresh.drop();
  }
}

async function runSoak(context) {
  const results = [];
  for (const store of ['sqlite', ...(process.env.BENCH_DATABASE_URL ? ['postgres'] : [])]) {
    results.push(await soakStore(store, context));
  }
  return results;
}

module.exports = { runSoak };
