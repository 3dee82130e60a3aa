// PostgreSQL server CPU per create batch and per read by id, prepared statements on and off.
// node bench/postgres-statement-cpu.js [batches] (after `npx nest build`; BENCH_DATABASE_URL as for run.js)
//
// Runs the built repository (with the webhook outbox's CTEs in the insert, as the service does) on a
// pool of one connection in a fresh schema, and reads that connection's backend CPU time from
// /proc/<pid>/stat (PostgreSQL on this machine) before and after: the server's work per statement,
// which the load of other processes does not move (wall-clock figures here do). The client's CPU
// per statement (process.cpuUsage) is printed too. Batches of 1 and of 32 creates, then reads by id.
'use strict';
const { readFileSync } = require('node:fs');
const { Client } = require('pg');
const { PostgresDatabase } = require('../dist/database/postgres-database');
const { APP_MIGRATIONS } = require('../dist/app.migrations');
const { SqlPlantsRepository } = require('../dist/plants/persistence/sql-plants.repository');
const { SqlOutboxStore } = require('../dist/webhooks/persistence/sql-outbox.store');

const BATCHES = Number(process.argv[2] ?? 2000);
const TICK_US = 1e6 / 100; // USER_HZ

function backendCpuUs(pid) {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return (Number(fields[11]) + Number(fields[12])) * TICK_US; // utime, stime
}

async function measure(url, preparedStatements) {
  const database = new PostgresDatabase(
    { url, poolMax: 1, connectAttempts: 1, queryTimeoutMs: 30_000, preparedStatements },
    APP_MIGRATIONS,
  );
  await database.onModuleInit();
  const outbox = new SqlOutboxStore(database, database.kysely);
  const events = {
    created() {},
    committed() {},
    createdInStatement: (inserted, plants) => {
      const { ctes, deliveries } = outbox.writeWith(
        inserted,
        plants.map((plant) => ({ rowId: plant.id, id: `msg_${plant.id}`, eventType: 'plant.created', payload: '{}' })),
      );
      return { ctes, outcome: deliveries, committed: () => undefined };
    },
  };
  const repository = new SqlPlantsRepository(database, database.kysely, events);
  const { rows } = await database.pool.query('SELECT pg_backend_pid() AS pid');
  const pid = rows[0].pid;
  let next = 1n;
  const run = async (label, count, work) => {
    for (let i = 0; i < 50; i++) await work(); // warm: the statements prepared, the caches filled
    const server = backendCpuUs(pid);
    const client = process.cpuUsage();
    for (let i = 0; i < count; i++) await work();
    const serverUs = (backendCpuUs(pid) - server) / count;
    const { user, system } = process.cpuUsage(client);
    console.log(
      `${preparedStatements ? 'on ' : 'off'} ${label}: server ${serverUs.toFixed(0)} µs, client ${((user + system) / count).toFixed(0)} µs per statement`,
    );
  };
  const createBatch = (size) => () =>
    Promise.all(Array.from({ length: size }, () => repository.create({ id: next++, name: 'Fern', tag: 'shade' })));
  await run('create batch of 1 ', BATCHES, createBatch(1));
  await run('create batch of 32', BATCHES / 4, createBatch(32));
  let id = 0n;
  await run('get by id         ', BATCHES, () => repository.get((id++ % 1000n) + 1n));
  await repository.onModuleDestroy();
  await database.onApplicationShutdown();
}

async function main() {
  const base = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
  const admin = new Client({ connectionString: base });
  await admin.connect();
  const schema = `bench_statements_${process.pid}`;
  const url = new URL(base);
  url.searchParams.set('options', `-c search_path=${schema}`);
  try {
    for (const prepared of [true, false, true, false]) {
      await admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE; CREATE SCHEMA ${schema}`);
      await measure(url.toString(), prepared);
    }
  } finally {
    await admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
    await admin.end();
  }
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
