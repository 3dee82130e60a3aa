// Runs a command (by default `npm test`) with TEST_DATABASE_URL set to a database made for this
// run on a local PostgreSQL, and drops that database afterwards, whatever the outcome.
// `npm run test:postgres` runs it with `npm test --`, so what follows its own `--` reaches Jest:
//   npm run test:postgres                      the whole suite, on both stores
//   npm run test:postgres -- garden-beds       the tests whose path holds "garden-beds", on both stores
//   node test/support/with-test-database.js npx jest <paths>   any other command
// POSTGRES_ADMIN_URL says where to make it (default postgres://postgres@127.0.0.1:5432/postgres).
const { spawn } = require('node:child_process');
const { randomBytes } = require('node:crypto');
const { Client } = require('pg');

const adminUrl = process.env.POSTGRES_ADMIN_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const [command, ...args] = process.argv.length > 2 ? process.argv.slice(2) : ['npm', 'test'];
const name = `plant_store_test_${randomBytes(4).toString('hex')}`;

async function admin(sql) {
  const client = new Client({ connectionString: adminUrl, connectionTimeoutMillis: 5000 });
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}

async function main() {
  try {
    await admin(`CREATE DATABASE ${name}`);
  } catch (error) {
    console.error(`Cannot create a test database through ${new URL(adminUrl).host}: ${error.message}`);
    return 1;
  }
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  try {
    const child = spawn(command, args, {
      stdio: 'inherit',
      env: { ...process.env, TEST_DATABASE_URL: url.toString() },
    });
    for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, () => child.kill(signal));
    return await new Promise((resolve) => child.on('exit', (code) => resolve(code ?? 1)));
  } finally {
    await admin(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`).catch((error) =>
      console.error(`Could not drop ${name}: ${error.message}`),
    );
  }
}

main().then((code) => (process.exitCode = code));
