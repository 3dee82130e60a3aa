import { randomBytes } from 'node:crypto';
import { Client } from 'pg';

/** The PostgreSQL the tests may use; unset, the PostgreSQL suites are skipped (CI always sets it). */
export const TEST_DATABASE_URL = process.env.TEST_DATABASE_URL;

if (process.env.CI && !TEST_DATABASE_URL) {
  throw new Error('CI must set TEST_DATABASE_URL: the PostgreSQL suites are never skipped in CI');
}

/** `describe` when TEST_DATABASE_URL is set, `describe.skip` otherwise (locally, without PostgreSQL). */
export const describePostgres: jest.Describe = TEST_DATABASE_URL ? describe : describe.skip;

/**
 * One e2e suite on each store: SQLite always; PostgreSQL when TEST_DATABASE_URL is set, and shown
 * as skipped otherwise (so the run's summary counts what it left out). `%s` in the title is the store.
 */
export function describeOnEachStore(title: string, suite: (postgres: boolean) => void): void {
  describe(title.replace('%s', 'SQLite'), () => suite(false));
  describePostgres(title.replace('%s', 'PostgreSQL'), () => suite(true));
}

export interface TestSchema {
  /** TEST_DATABASE_URL with search_path set to the fresh schema, and a unique application_name. */
  url: string;
  name: string;
  /** Runs SQL on the test database as an administrator (outside the schema). */
  admin(sql: string, params?: unknown[]): Promise<{ rows: Record<string, unknown>[] }>;
  /** Ends connections to the schema's application name and drops the schema. */
  drop(): Promise<void>;
}

/** A fresh, empty schema in the test database, so tests share nothing and leave nothing behind. */
export async function createTestSchema(base = TEST_DATABASE_URL): Promise<TestSchema> {
  if (!base) throw new Error('TEST_DATABASE_URL is not set');
  const name = `plant_store_test_${randomBytes(6).toString('hex')}`;
  const admin = async (sql: string, params?: unknown[]) => {
    const client = new Client({ connectionString: base });
    await client.connect();
    try {
      return await client.query<Record<string, unknown>>(sql, params);
    } finally {
      await client.end();
    }
  };
  await admin(`CREATE SCHEMA ${name}`);
  return {
    name,
    url: withParams(base, { options: `-c search_path=${name}`, application_name: name }),
    admin,
    drop: async () => {
      await admin('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1', [name]);
      await admin(`DROP SCHEMA ${name} CASCADE`);
    },
  };
}

/** The same URL with other query parameters (kept as given: host, port, user, database). */
export function withParams(url: string, params: Record<string, string>): string {
  const parsed = new URL(url);
  for (const [key, value] of Object.entries(params)) parsed.searchParams.set(key, value);
  return parsed.toString();
}

/** The same URL, pointed at another port on 127.0.0.1 (a proxy in front of the server). */
export function viaPort(url: string, port: number): string {
  const parsed = new URL(url);
  parsed.hostname = '127.0.0.1';
  parsed.port = String(port);
  return parsed.toString();
}
