import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ResourceConflictError } from '../src/common/errors/resource-conflict.error';
import { Database } from '../src/database/database';
import { insertOnce } from '../src/database/insert-once';
import { PostgresDatabase } from '../src/database/postgres-database';
import { SqliteDatabase } from '../src/database/sqlite-database';
import { PLANTS_MIGRATIONS } from '../src/plants/persistence/plants.migrations';
import { plantQueries } from '../src/plants/persistence/sql-plants.repository';
import { createTestSchema, describePostgres, TestSchema } from './support/postgres';

/**
 * The shared create rule (a new resource's repository starts with it), on each store, over a real
 * table: plants'. Stored once; the same row again is a replay; other content is a 409; concurrent
 * creates of one key store it once.
 */
function describeInsertOnce(name: string, open: () => Promise<{ database: Database; dispose(): Promise<void> }>) {
  describe(`insertOnce on ${name}`, () => {
    let database: Database;
    let dispose: () => Promise<void>;
    let create: (id: bigint, plantName: string) => Promise<{ created: boolean }>;

    beforeEach(async () => {
      ({ database, dispose } = await open());
      const queries = plantQueries(database.kysely);
      create = (id, plantName) =>
        insertOnce(
          database,
          'a plant',
          { insert: queries.insert({ id, name: plantName, tag: null }), stored: queries.byId({ id }) },
          (stored) => stored.name === plantName && stored.tag === null,
          `A plant with id ${id} already exists with a different name or tag`,
        );
    });
    afterEach(() => dispose());

    it('should store a new key, then answer the same content as a replay', async () => {
      await expect(create(9007199254740993n, 'Monstera')).resolves.toEqual({ created: true });
      await expect(create(9007199254740993n, 'Monstera')).resolves.toEqual({ created: false });
      const { rows } = await database.execute('read', plantQueries(database.kysely).byId({ id: 9007199254740993n }));
      expect(rows.map((row) => BigInt(row.id))).toEqual([9007199254740993n]);
    });

    it('should refuse other content for a stored key with ResourceConflictError, and change nothing', async () => {
      await create(-4n, 'Aloe');
      const conflict = create(-4n, 'Pothos');
      await expect(conflict).rejects.toThrow(ResourceConflictError);
      await expect(conflict).rejects.toThrow('A plant with id -4 already exists with a different name or tag');
      const { rows } = await database.execute('read', plantQueries(database.kysely).byId({ id: -4n }));
      expect(rows.map((row) => row.name)).toEqual(['Aloe']);
    });

    it('should store a key once when many create it at once, the rest being replays or conflicts', async () => {
      const outcomes = await Promise.allSettled(
        Array.from({ length: 20 }, (_, i) => create(77n, i % 2 === 0 ? 'Fern' : 'Ivy')),
      );
      const created = outcomes.filter((o) => o.status === 'fulfilled' && o.value.created);
      expect(created).toHaveLength(1);
      const rejected = outcomes.filter((o) => o.status === 'rejected');
      expect(rejected).toHaveLength(10);
      for (const o of rejected) expect((o as PromiseRejectedResult).reason).toBeInstanceOf(ResourceConflictError);
    });
  });
}

describeInsertOnce('SQLite', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'insert-once-'));
  const database = new SqliteDatabase(join(dir, 'plants.db'), PLANTS_MIGRATIONS);
  await database.onModuleInit();
  return {
    database,
    dispose: async () => {
      await database.onApplicationShutdown();
      rmSync(dir, { recursive: true, force: true });
    },
  };
});

describePostgres('insertOnce (PostgreSQL)', () => {
  describeInsertOnce('PostgreSQL', async () => {
    const schema: TestSchema = await createTestSchema();
    const database = new PostgresDatabase(
      { url: schema.url, poolMax: 10, connectAttempts: 1, queryTimeoutMs: 30_000 },
      PLANTS_MIGRATIONS,
    );
    await database.onModuleInit();
    return {
      database,
      dispose: async () => {
        await database.onApplicationShutdown();
        await schema.drop();
      },
    };
  });
});
