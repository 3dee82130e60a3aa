import { PlantConflictError } from '../src/plants/persistence/plant-conflict.error';
import { PostgresDatabase } from '../src/database/postgres-database';
import { PLANTS_MIGRATIONS } from '../src/plants/persistence/plants.migrations';
import { POSTGRES_PAGE_SQL, PostgresPlantsRepository } from '../src/plants/persistence/postgres-plants.repository';
import { StorageError } from '../src/database/storage.error';
import { StorageUnavailableError } from '../src/database/storage-unavailable.error';
import { describePlantsRepositoryContract } from './plants-repository.contract';
import { createTestSchema, describePostgres, TestSchema, viaPort } from './support/postgres';
import { TcpProxy } from './support/tcp-proxy';

type OpenRepository = PostgresPlantsRepository & { ping(): Promise<void>; close(): Promise<void> };

/** The repository on a PostgresDatabase of its own, as DatabaseModule makes it; close() closes both. */
async function openRepository(url: string, connectAttempts = 1): Promise<OpenRepository> {
  const database = new PostgresDatabase(
    { url, poolMax: 20, connectAttempts, queryTimeoutMs: 30_000 },
    PLANTS_MIGRATIONS,
  );
  try {
    await database.onModuleInit();
  } catch (error) {
    await database.onApplicationShutdown();
    throw error;
  }
  const repository = new PostgresPlantsRepository(database);
  return Object.assign(repository, {
    ping: () => database.ping(),
    close: async () => {
      await repository.onModuleDestroy();
      await database.onApplicationShutdown();
    },
  });
}

describePostgres('PostgreSQL', () => {
  describePlantsRepositoryContract('PostgreSQL', async () => {
    const schema = await createTestSchema();
    let repository = await openRepository(schema.url);
    return {
      repository,
      reopen: async () => {
        await repository.close();
        repository = await openRepository(schema.url);
        return repository;
      },
      dispose: async () => {
        await repository.close();
        await schema.drop();
      },
    };
  });

  describe('PostgresPlantsRepository', () => {
    let schema: TestSchema;
    beforeEach(async () => (schema = await createTestSchema()));
    afterEach(() => schema.drop());

    it('should keep ids in a BIGINT primary key', async () => {
      const repository = await openRepository(schema.url);
      await repository.close();
      const { rows } = await schema.admin(
        `SELECT column_name, data_type FROM information_schema.columns WHERE table_schema = $1 AND table_name = 'plants' ORDER BY ordinal_position`,
        [schema.name],
      );
      expect(rows).toEqual([
        { column_name: 'id', data_type: 'bigint' },
        { column_name: 'name', data_type: 'text' },
        { column_name: 'tag', data_type: 'text' },
      ]);
    });

    it('should read a page by an index scan on the primary key, whatever its depth', async () => {
      await (await openRepository(schema.url)).close();
      const table = `${schema.name}.plants`;
      await schema.admin(`INSERT INTO ${table} (id, name) SELECT i, 'p' FROM generate_series(1, 50000) AS i`);
      await schema.admin(`ANALYZE ${table}`);
      const plan = async (sql: string, params: unknown[]) => {
        const { rows } = await schema.admin(`EXPLAIN ${sql.replace('FROM plants', `FROM ${table}`)}`, params);
        return rows.map((row) => String(row['QUERY PLAN'])).join('\n');
      };
      for (const [sql, params] of [
        [POSTGRES_PAGE_SQL.after, ['49000', 100]],
        [POSTGRES_PAGE_SQL.after, ['10', 100]],
        [POSTGRES_PAGE_SQL.first, [100]],
      ] as const) {
        const explained = await plan(sql, [...params]);
        expect(explained).toMatch(/Index Scan using plants_pkey/);
        expect(explained).not.toMatch(/Seq Scan|Sort|Offset/);
      }
      expect(await plan(POSTGRES_PAGE_SQL.after, ['49000', 100])).toMatch(/Index Cond: \(id > '49000'::bigint\)/);
    });

    it('should migrate exactly once when several instances start at the same moment', async () => {
      const repositories = await Promise.all(Array.from({ length: 5 }, () => openRepository(schema.url)));
      await Promise.all(repositories.map((repository) => repository.close()));
      const { rows } = await schema.admin(`SELECT version, name FROM ${schema.name}.schema_migrations`);
      expect(rows).toEqual([{ version: 1, name: 'create plants' }]);
    });

    it('should refuse a schema newer than it knows', async () => {
      await (await openRepository(schema.url)).close();
      await schema.admin(`INSERT INTO ${schema.name}.schema_migrations (version, name) VALUES (99, 'from the future')`);
      await expect(openRepository(schema.url)).rejects.toThrow(
        'The PostgreSQL database has schema version 99, newer than this build knows (1)',
      );
    });

    describe('when creates arrive together', () => {
      let repository: OpenRepository;
      beforeEach(async () => (repository = await openRepository(schema.url)));
      afterEach(() => repository.close());

      /** How many transactions wrote the stored rows (rows written by one transaction share its xmin). */
      const transactions = async () => {
        const { rows } = await schema.admin(`SELECT count(DISTINCT xmin::text)::int AS n FROM ${schema.name}.plants`);
        return rows[0].n;
      };

      it('should commit them as one transaction, each resolved with its own plant', async () => {
        const plants = Array.from({ length: 300 }, (_, i) => ({ id: BigInt(i) - 150n, name: `plant ${i}` }));
        const results = await Promise.all(plants.map((plant) => repository.create(plant)));
        expect(results).toEqual(plants.map((plant) => ({ plant, created: true })));
        await expect(transactions()).resolves.toBe(1);
      });

      it('should settle one id sent twice in one batch like two creates in a row', async () => {
        const results = await Promise.allSettled([
          repository.create({ id: 1n, name: 'Fern', tag: 'shade' }),
          repository.create({ id: 1n, name: 'Fern', tag: 'shade' }),
          repository.create({ id: 1n, name: 'Other' }),
          repository.create({ id: 2n, name: 'Moss' }),
        ]);
        expect(results).toEqual([
          { status: 'fulfilled', value: { plant: { id: 1n, name: 'Fern', tag: 'shade' }, created: true } },
          { status: 'fulfilled', value: { plant: { id: 1n, name: 'Fern', tag: 'shade' }, created: false } },
          { status: 'rejected', reason: new PlantConflictError(1n) },
          { status: 'fulfilled', value: { plant: { id: 2n, name: 'Moss' }, created: true } },
        ]);
        await expect(transactions()).resolves.toBe(1);
      });

      it('should insert a batch in id order, so batches sharing ids cannot deadlock', async () => {
        // Two batches that insert common ids in different orders can each hold a row lock the other
        // waits for; in id order, they cannot. Rows of one INSERT land in the table in insertion order.
        await Promise.all([5n, -3n, 9n, 1n].map((id) => repository.create({ id, name: `plant ${id}` })));
        const { rows } = await schema.admin(`SELECT id::text FROM ${schema.name}.plants ORDER BY ctid`);
        expect(rows).toEqual([{ id: '-3' }, { id: '1' }, { id: '5' }, { id: '9' }]);
      });

      it('should fail only the plant the server refuses, and store the rest', async () => {
        // PostgreSQL refuses NUL in text (the DTO keeps it from ever getting here): the whole
        // batch's statement fails, so each plant is tried again on its own.
        const results = await Promise.allSettled([
          repository.create({ id: 10n, name: 'before' }),
          repository.create({ id: 11n, name: 'nul \u0000 inside' }),
          repository.create({ id: 12n, name: 'after' }),
        ]);
        expect(results.map((result) => result.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
        const { reason } = results[1] as PromiseRejectedResult;
        expect(reason).toBeInstanceOf(StorageError);
        expect(reason).toHaveProperty('message', 'PostgreSQL failed to store a plant');
        const { rows } = await schema.admin(`SELECT id::text, name FROM ${schema.name}.plants ORDER BY id`);
        expect(rows).toEqual([
          { id: '10', name: 'before' },
          { id: '12', name: 'after' },
        ]);
      });

      it('should isolate a refused plant in a batch of 500 by halving it, not by 500 transactions at once', async () => {
        const plants = Array.from({ length: 500 }, (_, i) => ({
          id: BigInt(i),
          name: i === 137 ? 'nul \u0000 inside' : `plant ${i}`,
        }));
        const results = await Promise.allSettled(plants.map((plant) => repository.create(plant)));
        expect(results.filter((result) => result.status === 'rejected')).toHaveLength(1);
        expect(results[137].status).toBe('rejected');
        const { rows } = await schema.admin(`SELECT count(*)::int AS n FROM ${schema.name}.plants`);
        expect(rows).toEqual([{ n: 499 }]);
        // Each half that holds no refused plant commits as one: about log2(500) transactions, one at a time.
        expect(await transactions()).toBeLessThanOrEqual(2 * Math.ceil(Math.log2(500)));
      });

      it('should finish the creates in flight before it closes', async () => {
        const plants = Array.from({ length: 20 }, (_, i) => ({ id: BigInt(i), name: `late ${i}` }));
        const pending = Promise.all(plants.map((plant) => repository.create(plant)));
        await repository.close();
        await expect(pending).resolves.toHaveLength(20);
        const { rows } = await schema.admin(`SELECT count(*)::int AS n FROM ${schema.name}.plants`);
        expect(rows).toEqual([{ n: 20 }]);
        repository = await openRepository(schema.url); // for afterEach
      });
    });

    describe('when the server is unreachable at start-up', () => {
      it('should retry, then give up with one clear error', async () => {
        const proxy = new TcpProxy('127.0.0.1', 1);
        await proxy.start();
        await proxy.cut();
        const started = Date.now();
        await expect(openRepository(viaPort(schema.url, proxy.port), 3)).rejects.toThrow(
          /^PostgreSQL at 127\.0\.0\.1:\d+\/\w+ is unreachable after 3 attempt\(s\): .+; check DATABASE_URL/,
        );
        // Backoff of 200 ms then 400 ms between the three attempts.
        expect(Date.now() - started).toBeGreaterThanOrEqual(600);
      });
    });

    describe('when the database goes away during operation', () => {
      let proxy: TcpProxy;
      let repository: OpenRepository;

      beforeEach(async () => {
        const target = new URL(schema.url);
        proxy = new TcpProxy(target.hostname, Number(target.port || 5432));
        await proxy.start();
        repository = await openRepository(viaPort(schema.url, proxy.port));
      });
      afterEach(async () => {
        await proxy.cut();
        await repository.close();
      });

      it('should reject with StorageUnavailableError, then recover on its own', async () => {
        await repository.create({ id: 1n, name: 'before' });
        await proxy.cut();
        await expect(repository.create({ id: 2n, name: 'during' })).rejects.toThrow(StorageUnavailableError);
        await expect(repository.ping()).rejects.toThrow(StorageUnavailableError);
        await proxy.start();
        await expect(repository.create({ id: 2n, name: 'during' })).resolves.toMatchObject({
          plant: { id: 2n, name: 'during' },
        });
        await expect(repository.create({ id: 1n, name: 'before' })).resolves.toMatchObject({
          plant: { id: 1n, name: 'before' },
        });
      });

      it('should survive its connections being terminated by the server', async () => {
        await repository.create({ id: 3n, name: 'first' });
        await schema.admin('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1', [
          schema.name,
        ]);
        await expect(repository.create({ id: 4n, name: 'after' })).resolves.toMatchObject({
          plant: { id: 4n, name: 'after' },
        });
        await expect(repository.create({ id: 3n, name: 'first' })).resolves.toMatchObject({
          plant: { id: 3n, name: 'first' },
        });
      });
    });
  });
});
