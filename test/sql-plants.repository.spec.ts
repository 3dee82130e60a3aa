import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { CompiledQuery, Kysely, PostgresDialect, SqliteDialect } from 'kysely';
import { Pool } from 'pg';
import { keysetPageQueries } from '../src/database/keyset-pages';
import { PostgresDatabase } from '../src/database/postgres-database';
import { SqliteDatabase } from '../src/database/sqlite-database';
import { StorageError } from '../src/database/storage.error';
import { StorageUnavailableError } from '../src/database/storage-unavailable.error';
import { Tables } from '../src/database/tables';
import { Transaction } from '../src/database/transaction';
import { Events } from '../src/events/events';
import { NoEvents } from '../src/events/publishes';
import { Plant } from '../src/plants/plant';
import { ResourceConflictError } from '../src/common/errors/resource-conflict.error';
import { conflictMessage } from '../src/common/resources/resource-name';
import { PLANTS_MIGRATIONS } from '../src/plants/persistence/plants.migrations';
import { SqlPlantsRepository } from '../src/plants/persistence/sql-plants.repository';
import { describePlantsRepositoryContract } from './plants-repository.contract';
import { createTestSchema, describePostgres, TestSchema, viaPort } from './support/postgres';
import { TcpProxy } from './support/tcp-proxy';

const conflict = (id: bigint) =>
  new ResourceConflictError(conflictMessage('plant', id, { differs: 'a different name or tag' }));

type OpenRepository = SqlPlantsRepository & { ping(): Promise<void>; close(): Promise<void> };

/** The repository on a database of its own, as DatabaseModule makes it; close() closes both. */
function opened(
  database: SqliteDatabase | PostgresDatabase,
  created: Events<Plant> = new NoEvents(),
  deleted: Events<Plant> = new NoEvents(),
): OpenRepository {
  const repository = new SqlPlantsRepository(database, created, deleted);
  return Object.assign(repository, {
    ping: () => database.ping(),
    close: async () => {
      await repository.onModuleDestroy();
      await database.onApplicationShutdown();
    },
  });
}

async function openSqlite(path: string, created?: Events<Plant>, deleted?: Events<Plant>): Promise<OpenRepository> {
  const database = new SqliteDatabase(path, PLANTS_MIGRATIONS);
  await database.onModuleInit();
  return opened(database, created, deleted);
}

async function openPostgres(
  url: string,
  connectAttempts = 1,
  { poolMax = 20, preparedStatements = true } = {},
  deleted?: Events<Plant>,
): Promise<OpenRepository> {
  const database = new PostgresDatabase(
    { url, poolMax, connectAttempts, queryTimeoutMs: 30_000, preparedStatements },
    PLANTS_MIGRATIONS,
  );
  try {
    await database.onModuleInit();
  } catch (error) {
    await database.onApplicationShutdown();
    throw error;
  }
  return opened(database, new NoEvents(), deleted);
}

/** The keyset page queries as the repository's `InsertOnce` compiles them for `dialect`, for their query plans. */
function pageQueries(dialect: SqliteDialect | PostgresDialect) {
  const queries = keysetPageQueries(new Kysely<Tables>({ dialect }), 'plants', ['id', 'name', 'tag']);
  return {
    first: (limit: number) => queries.first({ limit }),
    after: (after: bigint, limit: number) => queries.after({ after, limit }),
  };
}

/**
 * A port that records what each transaction publishes (with a statement of its own in it, as the
 * outbox's write has), each commit that follows, and can make one plant's transaction fail.
 */
class RecordingEvents extends Events<Plant> {
  readonly transactions: bigint[][] = [];
  commits = 0;
  failFor?: bigint;

  async publish(tx: Transaction, plants: readonly Plant[]): Promise<void> {
    if (plants.some((plant) => plant.id === this.failFor)) throw new Error('the outbox refused it');
    await tx.execute(CompiledQuery.raw('SELECT 1'));
    this.transactions.push(plants.map((plant) => plant.id));
    tx.afterCommit(() => (this.commits += 1));
  }
}

describePlantsRepositoryContract('SQLite', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'plant-store-sqlite-'));
  const path = join(dir, 'nested', 'plants.db');
  let repository = await openSqlite(path);
  return {
    repository,
    reopen: async () => {
      await repository.close();
      repository = await openSqlite(path);
      return repository;
    },
    dispose: async () => {
      await repository.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
});

describePostgres('PostgreSQL', () => {
  for (const preparedStatements of [true, false]) {
    const title = preparedStatements ? 'PostgreSQL' : 'PostgreSQL, DATABASE_PREPARED_STATEMENTS=false';
    describePlantsRepositoryContract(title, async () => {
      const schema = await createTestSchema();
      let repository = await openPostgres(schema.url, 1, { preparedStatements });
      return {
        repository,
        reopen: async () => {
          await repository.close();
          repository = await openPostgres(schema.url, 1, { preparedStatements });
          return repository;
        },
        dispose: async () => {
          await repository.close();
          await schema.drop();
        },
      };
    });
  }
});

/** What only SQLite does: the file, its group commit of creates and deletes, its query plans. */
describe('SqlPlantsRepository on SQLite', () => {
  let dir: string;
  let path: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'plant-store-sqlite-'));
    path = join(dir, 'data', 'plants.db');
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('should create the folder, use WAL, and make a STRICT table with a 64-bit rowid key', async () => {
    await (await openSqlite(path)).close();
    expect(existsSync(path)).toBe(true);
    const db = new Database(path, { readonly: true });
    expect(db.pragma('journal_mode', { simple: true })).toBe('wal');
    const columns = db.prepare('SELECT name, type, pk FROM pragma_table_info(?)').all('plants');
    expect(columns).toEqual([
      { name: 'id', type: 'INTEGER', pk: 1 },
      { name: 'name', type: 'TEXT', pk: 0 },
      { name: 'tag', type: 'TEXT', pk: 0 },
    ]);
    db.close();
  });

  describe('group commit', () => {
    let hook: RecordingEvents;
    let deletes: RecordingEvents;
    let repository: OpenRepository;
    beforeEach(async () => {
      hook = new RecordingEvents();
      deletes = new RecordingEvents();
      repository = await openSqlite(path, hook, deletes);
    });
    afterEach(() => repository.close());

    it('should commit the creates that arrive together in one transaction, each answered on its own', async () => {
      await repository.create({ id: 5n, name: 'already there' });
      const results = await Promise.all([
        ...[1n, 2n, 3n].map((id) => repository.create({ id, name: `plant ${id}` })),
        repository.create({ id: 5n, name: 'already there' }),
        repository.create({ id: 5n, name: 'another name' }).catch((error: unknown) => error),
        repository.create({ id: 4n, name: 'plant 4', tag: 'last' }),
      ]);
      expect(results).toEqual([
        { created: true },
        { created: true },
        { created: true },
        { created: false },
        conflict(5n),
        { created: true },
      ]);
      // The first create alone, then one transaction for the six that came together.
      expect(hook.transactions).toEqual([[5n], [1n, 2n, 3n, 4n]]);
      expect(hook.commits).toBe(2);
    });

    it('should keep the order of creates and deletes of one id within a batch', async () => {
      const outcomes = await Promise.all([
        repository.create({ id: 7n, name: 'first' }),
        repository.delete(7n),
        repository.delete(7n),
        repository.create({ id: 7n, name: 'second' }),
      ]);
      expect(outcomes).toEqual([{ created: true }, true, false, { created: true }]);
      await expect(repository.get(7n)).resolves.toEqual({ id: 7n, name: 'second' });
      // Create, delete and create of one id: three events, published in the writes' order (a run of
      // creates or of deletes a call) in the batch's one transaction, all after its commit.
      expect(hook.transactions).toEqual([[7n], [7n]]);
      expect(deletes.transactions).toEqual([[7n]]);
      expect([hook.commits, deletes.commits]).toEqual([2, 1]);
    });

    it('should fail only the write whose statement failed, and store the others', async () => {
      hook.failFor = 12n;
      const results = await Promise.allSettled([11n, 12n, 13n].map((id) => repository.create({ id, name: 'x' })));
      expect(results.map((result) => result.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
      expect((results[1] as PromiseRejectedResult).reason).toBeInstanceOf(StorageError);
      expect((results[1] as PromiseRejectedResult).reason.message).toBe('SQLite failed to store a plant');
      await expect(repository.get(11n)).resolves.toEqual({ id: 11n, name: 'x' });
      await expect(repository.get(12n)).resolves.toBeUndefined();
      await expect(repository.get(13n)).resolves.toEqual({ id: 13n, name: 'x' });
    });

    it('should not let a read see part of a batch', async () => {
      const creates = [21n, 22n, 23n].map((id) => repository.create({ id, name: 'batched' }));
      // Asked in the same turn, the read runs before the batch: it sees none of it, then all of it.
      await expect(repository.list({ limit: 10 })).resolves.toEqual([]);
      await Promise.all(creates);
      await expect(repository.list({ limit: 10 })).resolves.toHaveLength(3);
    });
  });

  it('should store ids in a 64-bit integer column, not as text or a double', async () => {
    const repository = await openSqlite(path);
    await repository.create({ id: 2n ** 63n - 1n, name: 'max' });
    await repository.close();
    const db = new Database(path, { readonly: true });
    db.defaultSafeIntegers(true);
    expect(db.prepare('SELECT id, typeof(id) AS type FROM plants').get()).toEqual({
      id: 2n ** 63n - 1n,
      type: 'integer',
    });
    db.close();
  });

  it('should read a page by a range search on the primary key, never a scan from the start', async () => {
    await (await openSqlite(path)).close();
    const db = new Database(path);
    db.exec(`WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 20000)
             INSERT INTO plants (id, name) SELECT i, 'p' FROM n`);
    const pages = pageQueries(new SqliteDialect({ database: db }));
    const plan = ({ sql, parameters }: CompiledQuery) =>
      db
        .prepare(`EXPLAIN QUERY PLAN ${sql}`)
        .all(...parameters)
        .map((row) => (row as { detail: string }).detail);
    // Deep in the store: a search from the cursor, no sort, no temporary b-tree.
    expect(plan(pages.after(19000n, 100))).toEqual(['SEARCH plants USING INTEGER PRIMARY KEY (rowid>?)']);
    // The first page walks the rowid order from its start, which is where it stops.
    expect(plan(pages.first(100))).toEqual(['SCAN plants']);
    db.close();
  });
});

/** What only PostgreSQL does: BIGINT, its batch insert, its plans, a server that goes away. */
describePostgres('SqlPlantsRepository on PostgreSQL', () => {
  let schema: TestSchema;
  beforeEach(async () => (schema = await createTestSchema()));
  afterEach(() => schema.drop());

  it('should keep ids in a BIGINT primary key', async () => {
    const repository = await openPostgres(schema.url);
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
    await (await openPostgres(schema.url)).close();
    const table = `${schema.name}.plants`;
    await schema.admin(`INSERT INTO ${table} (id, name) SELECT i, 'p' FROM generate_series(1, 50000) AS i`);
    await schema.admin(`ANALYZE ${table}`);
    const pages = pageQueries(new PostgresDialect({ pool: new Pool() }));
    const plan = async ({ sql, parameters }: CompiledQuery) => {
      const { rows } = await schema.admin(`EXPLAIN ${sql.replace('from "plants"', `from ${table}`)}`, [...parameters]);
      return rows.map((row) => String(row['QUERY PLAN'])).join('\n');
    };
    for (const query of [pages.after(49000n, 100), pages.after(10n, 100), pages.first(100)]) {
      const explained = await plan(query);
      expect(explained).toMatch(/Index Scan using plants_pkey/);
      expect(explained).not.toMatch(/Seq Scan|Sort|Offset/);
    }
    expect(await plan(pages.after(49000n, 100))).toMatch(/Index Cond: \(id > '49000'::bigint\)/);
  });

  describe('prepared statements', () => {
    /** Every request's statement once, on a pool of one connection; then what that session holds prepared. */
    const preparedAfterEachStatement = async (preparedStatements: boolean) => {
      const database = new PostgresDatabase(
        { url: schema.url, poolMax: 1, connectAttempts: 1, queryTimeoutMs: 30_000, preparedStatements },
        PLANTS_MIGRATIONS,
      );
      await database.onModuleInit();
      const repository = opened(database);
      try {
        for (let round = 0; round < 2; round++) {
          await repository.create({ id: 1n + BigInt(round), name: 'Fern', tag: 'shade' });
          await repository.get(1n);
          await repository.list({ limit: 10 });
          await repository.list({ limit: 10, after: 1n });
          await repository.delete(2n);
        }
        const { rows } = await database.pool.query<{ name: string; statement: string }>(
          'SELECT name, statement FROM pg_prepared_statements ORDER BY statement',
        );
        return rows;
      } finally {
        await repository.close();
      }
    };

    it('should run the insert, the reads and the delete as named statements, each prepared once per connection', async () => {
      const rows = await preparedAfterEachStatement(true);
      const statements = rows.map((row) => row.statement.replace(/\s+/g, ' ').trim());
      expect(statements).toEqual(
        expect.arrayContaining([
          // The insert with its events (none here) and the guard that all were new: one statement.
          expect.stringMatching(/^WITH insert_once_written AS \(INSERT INTO "plants" \("id", "name", "tag"\) SELECT/),
          'select "id", "name", "tag" from "plants" where "id" = $1',
          'select "id", "name", "tag" from "plants" order by "id" limit $1',
          'select "id", "name", "tag" from "plants" where "id" > $1 order by "id" limit $2',
          expect.stringMatching(/^WITH doomed AS \( SELECT id FROM "plants" WHERE id = ANY\(\$1::bigint\[\]\)/),
        ]),
      );
      expect(rows).toHaveLength(5); // two rounds, one of each: none prepared twice, none per call
      for (const row of rows) expect(row.name).toMatch(/^(INSERT|WITH|SELECT)-[\w-]{22}$/);
      // No `SELECT *`: a cached plan stays valid when a migration adds a column.
      for (const statement of statements) expect(statement).not.toMatch(/select \*/i);
    });

    it('should name no statement with DATABASE_PREPARED_STATEMENTS=false', async () => {
      await expect(preparedAfterEachStatement(false)).resolves.toEqual([]);
    });
  });

  describe('when creates arrive together', () => {
    let repository: OpenRepository;
    beforeEach(async () => (repository = await openPostgres(schema.url)));
    afterEach(() => repository.close());

    /** How many transactions wrote the stored rows (rows written by one transaction share its xmin). */
    const transactions = async () => {
      const { rows } = await schema.admin(`SELECT count(DISTINCT xmin::text)::int AS n FROM ${schema.name}.plants`);
      return rows[0].n;
    };

    it('should commit them as one transaction, each resolved as created and stored as sent', async () => {
      const plants = Array.from({ length: 300 }, (_, i) => ({ id: BigInt(i) - 150n, name: `plant ${i}` }));
      const results = await Promise.all(plants.map((plant) => repository.create(plant)));
      expect(results).toEqual(plants.map(() => ({ created: true })));
      await expect(transactions()).resolves.toBe(1);
      await expect(repository.list({ limit: 300 })).resolves.toEqual(plants);
    });

    it('should settle one id sent twice in one batch like two creates in a row', async () => {
      const results = await Promise.allSettled([
        repository.create({ id: 1n, name: 'Fern', tag: 'shade' }),
        repository.create({ id: 1n, name: 'Fern', tag: 'shade' }),
        repository.create({ id: 1n, name: 'Other' }),
        repository.create({ id: 2n, name: 'Moss' }),
      ]);
      expect(results).toEqual([
        { status: 'fulfilled', value: { created: true } },
        { status: 'fulfilled', value: { created: false } },
        { status: 'rejected', reason: conflict(1n) },
        { status: 'fulfilled', value: { created: true } },
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
      repository = await openPostgres(schema.url); // for afterEach
    });
  });

  describe('when deletes arrive together', () => {
    let deletes: RecordingEvents;
    let repository: OpenRepository;
    beforeEach(async () => {
      deletes = new RecordingEvents();
      repository = await openPostgres(schema.url, 1, {}, deletes);
    });
    afterEach(() => repository.close());

    it('should delete them in one transaction with their events, each answered on its own, an id twice found once', async () => {
      const plants = Array.from({ length: 50 }, (_, i) => ({ id: BigInt(i) - 25n, name: `plant ${i}` }));
      await Promise.all(plants.map((plant) => repository.create(plant)));
      const outcomes = await Promise.all([
        ...plants.map((plant) => repository.delete(plant.id)),
        repository.delete(-25n), // again: the first of the two found it
        repository.delete(1000n), // never stored
      ]);
      expect(outcomes).toEqual([...plants.map(() => true), false, false]);
      expect(deletes.transactions).toEqual([plants.map((plant) => plant.id).sort((a, b) => Number(a - b))]);
      expect(deletes.commits).toBe(1);
      await expect(repository.list({ limit: 10 })).resolves.toEqual([]);
    });

    it('should delete nothing when the batch’s events fail, and answer each delete with the failure', async () => {
      await repository.create({ id: 1n, name: 'Fern' });
      deletes.failFor = 1n;
      const outcomes = await Promise.allSettled([repository.delete(1n), repository.delete(2n)]);
      expect(outcomes.map((outcome) => outcome.status)).toEqual(['rejected', 'fulfilled']);
      await expect(repository.get(1n)).resolves.toEqual({ id: 1n, name: 'Fern' });
    });
  });

  describe('when the server is unreachable at start-up', () => {
    it('should retry, then give up with one clear error', async () => {
      const proxy = new TcpProxy('127.0.0.1', 1);
      await proxy.start();
      await proxy.cut();
      const started = Date.now();
      await expect(openPostgres(viaPort(schema.url, proxy.port), 3)).rejects.toThrow(
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
      repository = await openPostgres(viaPort(schema.url, proxy.port));
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
      await expect(repository.create({ id: 2n, name: 'during' })).resolves.toEqual({ created: true });
      await expect(repository.create({ id: 1n, name: 'before' })).resolves.toEqual({ created: false });
    });

    it('should survive its connections being terminated by the server', async () => {
      await repository.create({ id: 3n, name: 'first' });
      await schema.admin('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1', [
        schema.name,
      ]);
      await expect(repository.create({ id: 4n, name: 'after' })).resolves.toEqual({ created: true });
      await expect(repository.create({ id: 3n, name: 'first' })).resolves.toEqual({ created: false });
    });
  });
});
