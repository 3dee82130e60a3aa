import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import { Client } from 'pg';
import { APP_MIGRATIONS } from '../src/app.migrations';
import { Database } from '../src/database/database';
import { inNameOrder, Migration, MIGRATION_NAME } from '../src/database/migration';
import { PostgresDatabase } from '../src/database/postgres-database';
import { SqliteDatabase } from '../src/database/sqlite-database';
import { PLANTS_MIGRATIONS } from '../src/plants/persistence/plants.migrations';
import { WEBHOOK_MIGRATIONS } from '../src/webhooks/persistence/webhooks.migrations';
import { request } from './support/http';
import { createTestSchema, describeOnEachStore, TestSchema } from './support/postgres';
import { createTestApp } from './support/test-app';

/** The features and their steps, read from the registry: each step's name carries its feature's prefix. */
const FEATURES: Record<string, Migration[]> = {};
for (const migration of APP_MIGRATIONS) {
  const feature = MIGRATION_NAME.exec(migration.name)?.[1] ?? '(unnamed)';
  (FEATURES[feature] ??= []).push(migration);
}

describe('the migration registry', () => {
  it('should hold every feature, each step named <feature>/<YYYY-MM-DD>-<NN>-<what> with its own prefix', () => {
    expect(FEATURES['(unnamed)']).toBeUndefined();
    expect(Object.keys(FEATURES)).toEqual(expect.arrayContaining(['plants', 'webhooks']));
    expect(FEATURES.plants).toEqual(PLANTS_MIGRATIONS);
    expect(FEATURES.webhooks).toEqual(WEBHOOK_MIGRATIONS);
    expect(() => inNameOrder(APP_MIGRATIONS)).not.toThrow();
  });

  it('should fail when two features give the same name', () => {
    const copied = { ...PLANTS_MIGRATIONS[0], sqlite: 'SELECT 1', postgres: 'SELECT 1', legacyVersion: undefined };
    expect(() => inNameOrder([...APP_MIGRATIONS, copied])).toThrow(
      'Two migrations share the name "plants/2026-11-20-01-create-plants"',
    );
  });

  it('should refuse a name without a feature and a date, and two steps claiming one legacy version', () => {
    expect(() => inNameOrder([{ name: '4-create-things', sqlite: '', postgres: '' }])).toThrow(
      'Migration "4-create-things" is not named <feature>/<YYYY-MM-DD>-<NN>-<what>',
    );
    expect(() =>
      inNameOrder([
        ...APP_MIGRATIONS,
        { name: 'things/2026-12-01-01-create', sqlite: '', postgres: '', legacyVersion: 3 },
      ]),
    ).toThrow('Two migrations claim legacy version 3');
  });

  it("should keep one feature's steps in the order they were written", () => {
    const names = inNameOrder(APP_MIGRATIONS).map(({ name }) => name);
    for (const migrations of Object.values(FEATURES)) {
      const own = migrations.map(({ name }) => name);
      expect(names.filter((name) => own.includes(name))).toEqual(own);
    }
  });
});

/**
 * One migration mechanism on each store: Kysely's Migrator over every feature's named steps, and the
 * databases of the builds before it (integer-versioned `schema_migrations`) carried over.
 */
describeOnEachStore('migrations (on %s)', (postgres) => {
  let dir: string;
  let schema: TestSchema | undefined;
  const opened: Database[] = [];

  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), 'plant-store-migrations-'));
    schema = postgres ? await createTestSchema() : undefined;
  });
  afterEach(async () => {
    for (const database of opened.splice(0))
      await (database as PostgresDatabase | SqliteDatabase).onApplicationShutdown();
    await schema?.drop();
    rmSync(dir, { recursive: true, force: true });
  });

  const path = () => join(dir, 'plants.db');
  const open = async (migrations: readonly Migration[] = APP_MIGRATIONS): Promise<Database> => {
    const database = postgres
      ? new PostgresDatabase({ url: schema!.url, poolMax: 4, connectAttempts: 1, queryTimeoutMs: 10_000 }, migrations)
      : new SqliteDatabase(path(), migrations);
    try {
      await database.onModuleInit();
    } catch (error) {
      await database.onApplicationShutdown();
      throw error;
    }
    opened.push(database);
    return database;
  };
  /** Runs SQL on the store as an operator would, outside the service. */
  const admin = async (sql: string): Promise<Record<string, unknown>[]> => {
    if (schema) {
      const client = new Client({ connectionString: schema.url });
      await client.connect();
      try {
        return (await client.query<Record<string, unknown>>(sql)).rows;
      } finally {
        await client.end();
      }
    }
    const db = new BetterSqlite3(path());
    db.defaultSafeIntegers(true);
    try {
      return sql.trimStart().toUpperCase().startsWith('SELECT')
        ? (db.prepare(sql).all() as Record<string, unknown>[])
        : (db.exec(sql), []);
    } finally {
      db.close();
    }
  };
  const applied = async () =>
    (await admin('SELECT name, timestamp FROM kysely_migration ORDER BY name')) as {
      name: string;
      timestamp: string;
    }[];
  const loadFixture = async () => {
    const fixture = readFileSync(
      join(__dirname, 'fixtures', 'integer-versioned', postgres ? 'postgres.sql' : 'sqlite.sql'),
      'utf8',
    );
    if (schema) await schema.admin(fixture.replaceAll('legacy_fixture', schema.name));
    else {
      const db = new BetterSqlite3(path());
      db.exec(fixture);
      db.close();
    }
  };

  it('should apply every step once on an empty store, then nothing on the next start', async () => {
    await (await open()).ping();
    const first = await applied();
    expect(first.map(({ name }) => name)).toEqual(inNameOrder(APP_MIGRATIONS).map(({ name }) => name));
    await (await open()).ping();
    expect(await applied()).toEqual(first);
  });

  it('should apply every step exactly once when several instances start at the same moment', async () => {
    await Promise.all(Array.from({ length: 4 }, () => open()));
    expect((await applied()).map(({ name }) => name)).toEqual(inNameOrder(APP_MIGRATIONS).map(({ name }) => name));
  });

  it("should apply a feature's step that sorts before steps already applied (unordered names)", async () => {
    await open(WEBHOOK_MIGRATIONS);
    await (await open()).ping();
    expect((await applied()).map(({ name }) => name)).toEqual(inNameOrder(APP_MIGRATIONS).map(({ name }) => name));
  });

  it('should take the failed-deliveries index an operator built beforehand (CONCURRENTLY on PostgreSQL)', async () => {
    const schedule = WEBHOOK_MIGRATIONS.findIndex((step) => step.name.includes('delivery-schedule-start'));
    await open([...PLANTS_MIGRATIONS, ...WEBHOOK_MIGRATIONS.slice(0, schedule)]);
    await admin(
      `CREATE INDEX ${postgres ? 'CONCURRENTLY ' : ''}webhook_deliveries_failed ON webhook_deliveries (endpoint_id, created_at, id) WHERE status = 'failed'`,
    );
    await (await open()).ping();
    expect((await applied()).map(({ name }) => name)).toEqual(inNameOrder(APP_MIGRATIONS).map(({ name }) => name));
  });

  it('should leave nothing of a start whose step fails', async () => {
    const broken: Migration = {
      name: 'plants/2099-01-01-01-broken',
      sqlite: 'CREATE TABLE later (id INTEGER); CREATE TABLE (',
      postgres: 'CREATE TABLE later (id INTEGER); CREATE TABLE (',
    };
    await expect(open([...PLANTS_MIGRATIONS, broken])).rejects.toThrow(/syntax error/);
    expect(await applied()).toEqual([]);
    await open(PLANTS_MIGRATIONS);
    expect((await applied()).map(({ name }) => name)).toEqual(['plants/2026-11-20-01-create-plants']);
  });

  it('should refuse a database migrated by a newer build', async () => {
    await open();
    await admin(`INSERT INTO kysely_migration (name, timestamp) VALUES ('plants/2099-01-01-01-from-the-future', 'x')`);
    await expect(open()).rejects.toThrow(
      `The ${postgres ? 'PostgreSQL' : 'SQLite'} database has migrations this build does not know (plants/2099-01-01-01-from-the-future)`,
    );
  });

  it('should not be ready while a step is missing', async () => {
    const database = await open();
    await admin(`DELETE FROM kysely_migration WHERE name = 'plants/2026-11-20-01-create-plants'`);
    await expect(database.ping()).rejects.toThrow('not migrated');
  });

  describe('with a database made by the build before named migrations', () => {
    beforeEach(loadFixture);

    it('should carry its versions over under their names, run none of them again, and keep every row', async () => {
      const before = await admin('SELECT version, applied_at FROM schema_migrations ORDER BY version');
      await (await open()).ping();
      const at = (version: number) =>
        new Date(before.find((row) => Number(row.version) === version)!.applied_at as string).toISOString();
      // Its versions under their names, with the times they were applied then; the steps added since run now.
      const steps = inNameOrder(APP_MIGRATIONS);
      expect(await applied()).toEqual(
        steps.map(({ name, legacyVersion }) =>
          legacyVersion === undefined
            ? { name, timestamp: expect.any(String) }
            : { name, timestamp: at(legacyVersion) },
        ),
      );
      expect(steps.filter((step) => step.legacyVersion !== undefined).map((step) => step.name)).toEqual([
        'plants/2026-11-20-01-create-plants',
        'webhooks/2026-11-23-01-create-webhook-deliveries',
        'webhooks/2026-11-23-02-endpoints-messages-deliveries-attempts',
      ]);
      // The old table stays as it was, for a rollback to the old build.
      expect(await admin('SELECT version, applied_at FROM schema_migrations ORDER BY version')).toEqual(before);
      expect(await admin('SELECT id, name, tag FROM plants')).toEqual([
        { id: postgres ? '9007199254740993' : 9007199254740993n, name: 'Monstera', tag: 'legacy' },
      ]);
      expect(await admin('SELECT count(*) AS n FROM webhook_deliveries')).toEqual([{ n: postgres ? '1' : 1n }]);
      // Its attempt so far was on the schedule it still follows: a recover or resend starts another.
      expect(await admin('SELECT attempts, schedule_from FROM webhook_deliveries')).toEqual([
        postgres ? { attempts: 1, schedule_from: 0 } : { attempts: 1n, schedule_from: 0n },
      ]);
      await open();
      expect(await applied()).toHaveLength(steps.length);
    });

    it('should refuse it when it holds a version this build does not know', async () => {
      await admin(
        `INSERT INTO schema_migrations (version, name, applied_at) VALUES (99, 'from the future', '2030-01-01')`,
      );
      await expect(open()).rejects.toThrow(
        `The ${postgres ? 'PostgreSQL' : 'SQLite'} database has schema version 99, newer than this build knows (3)`,
      );
    });

    it('should serve its plant, its endpoint and its delivery from the new build', async () => {
      const ADMIN = 'admin-token-0123456789abcdef';
      const app = await createTestApp({ ADMIN_TOKENS: ADMIN, ...(schema ? { DATABASE_URL: schema.url } : {}) }, dir);
      try {
        const plant = await request(`${app.url}/plants/9007199254740993`, { method: 'GET' });
        expect([plant.status, plant.text]).toEqual([200, '{"id":9007199254740993,"name":"Monstera","tag":"legacy"}']);
        const endpoints = await request(`${app.url}/webhooks/endpoints`, { method: 'GET', auth: `Bearer ${ADMIN}` });
        expect(endpoints.body).toEqual([
          expect.objectContaining({
            url: 'https://receiver.example/hooks',
            description: 'legacy fixture',
            disabled: false,
          }),
        ]);
        const [{ id }] = endpoints.body as { id: string }[];
        const deliveries = await request(`${app.url}/webhooks/endpoints/${id}/deliveries`, {
          method: 'GET',
          auth: `Bearer ${ADMIN}`,
        });
        expect(deliveries.body).toEqual([expect.objectContaining({ status: 'pending', attempts: 1 })]);
        const ready = await request(`${app.url}/health/ready`, { method: 'GET', auth: false });
        expect(ready.status).toBe(200);
      } finally {
        await app.close();
      }
    });
  });
});
