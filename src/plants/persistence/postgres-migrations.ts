import { Pool, PoolClient } from 'pg';

/**
 * The PostgreSQL schema, one versioned step at a time, like `SQLITE_MIGRATIONS`. Steps are applied
 * in order at start-up under an advisory lock and recorded in `schema_migrations`.
 */
export const POSTGRES_MIGRATIONS: readonly { version: number; name: string; sql: string }[] = [
  {
    version: 1,
    name: 'create plants',
    sql: `CREATE TABLE plants (
            id   BIGINT PRIMARY KEY,
            name TEXT NOT NULL,
            tag  TEXT
          )`,
  },
];

/** Applies the missing migrations in one transaction, serialised across instances by an advisory lock. */
export async function migrate(pool: Pool): Promise<void> {
  const client = await pool.connect();
  let failed = false;
  try {
    await client.query('BEGIN');
    await client.query("SELECT pg_advisory_xact_lock(hashtext('plant-store:schema-migrations'))");
    await client.query(`CREATE TABLE IF NOT EXISTS schema_migrations (
                          version    INTEGER PRIMARY KEY,
                          name       TEXT NOT NULL,
                          applied_at TIMESTAMPTZ NOT NULL DEFAULT now()
                        )`);
    await applyMissing(client);
    await client.query('COMMIT');
  } catch (error) {
    failed = true;
    await client.query('ROLLBACK').catch(() => undefined);
    throw error;
  } finally {
    client.release(failed);
  }
}

async function applyMissing(client: PoolClient): Promise<void> {
  const { rows } = await client.query<{ version: number }>('SELECT version FROM schema_migrations');
  const applied = new Set(rows.map((row) => row.version));
  const latest = POSTGRES_MIGRATIONS[POSTGRES_MIGRATIONS.length - 1].version;
  const newest = Math.max(0, ...applied);
  if (newest > latest) {
    throw new Error(`The PostgreSQL database has schema version ${newest}, newer than this build knows (${latest})`);
  }
  for (const migration of POSTGRES_MIGRATIONS) {
    if (applied.has(migration.version)) continue;
    await client.query(migration.sql);
    await client.query('INSERT INTO schema_migrations (version, name) VALUES ($1, $2)', [
      migration.version,
      migration.name,
    ]);
  }
}
