import { setTimeout as sleep } from 'node:timers/promises';
import { Logger, OnModuleDestroy, OnModuleInit } from '@nestjs/common';
import { Pool, QueryConfig, QueryResult, QueryResultRow } from 'pg';
import { Batcher } from 'promise-batcher';
import { Plant, samePlant } from '../plant';
import { PlantConflictError } from './plant-conflict.error';
import { CreateResult, PageQuery, PlantsRepository } from './plants.repository';
import { isQueryTimeout, isUnavailable } from './postgres-errors';
import { migrate } from './postgres-migrations';
import { StorageTimeoutError } from './storage-timeout.error';
import { StorageUnavailableError } from './storage-unavailable.error';
import { StorageError } from './storage.error';

export interface PostgresOptions {
  url: string;
  poolMax: number;
  connectAttempts: number;
  /** How long a create or ping waits for the server's answer before it fails with StorageTimeoutError. */
  queryTimeoutMs: number;
}

interface PlantRow {
  id: string;
  name: string;
  tag: string | null;
}

const MAX_BACKOFF_MS = 5000;
/** Plants per INSERT at most: three array parameters whatever the size, so this only bounds one statement's work. */
const MAX_BATCH = 500;
/**
 * Rounds of insert-or-read for a plant whose stored row was deleted between the two (see
 * `insertOrCompare`). Each round is a fresh race that the plant loses only if yet another create and
 * delete of its id slip in between two statements, so in practice the second round settles it.
 */
const MAX_VANISHED_ROUNDS = 10;
const PLANT_COLUMNS = 'id::text AS id, name, tag';

/**
 * Keyset pages: an index range scan on the primary key from the cursor, whatever the depth, never an
 * OFFSET. `plants.id`, not `id`: ORDER BY would take `id` for the output column, the id as text.
 * Exported for the test that reads their query plans.
 */
export const POSTGRES_PAGE_SQL = {
  first: `SELECT ${PLANT_COLUMNS} FROM plants ORDER BY plants.id LIMIT $1`,
  after: `SELECT ${PLANT_COLUMNS} FROM plants WHERE id > $1::bigint ORDER BY plants.id LIMIT $2`,
} as const;

/**
 * Plants in PostgreSQL, shared by any number of instances. Ids are BIGINT and travel as decimal
 * text both ways, never through a double. Duplicates are settled by the primary key.
 */
export class PostgresPlantsRepository implements PlantsRepository, OnModuleInit, OnModuleDestroy {
  private readonly logger = new Logger(PostgresPlantsRepository.name);
  private readonly pool: Pool;
  private readonly creates: Batcher<Plant, CreateResult>;

  constructor(private readonly options: PostgresOptions) {
    this.pool = new Pool({
      // Settings in the URL (application_name, options, ssl…) win over these defaults.
      application_name: 'plant-store',
      connectionString: options.url,
      max: options.poolMax,
      connectionTimeoutMillis: 5000,
      idleTimeoutMillis: 30000,
    });
    // An idle connection that dies (server restart, pg_terminate_backend) is dropped by the pool;
    // without a listener its error event would end the process.
    this.pool.on('error', (error) => this.logger.warn(`Dropped a broken PostgreSQL connection: ${error.message}`));
    // Group commit: the creates that reach the repository in one turn of the event loop go to the
    // database as one statement and one commit, and each resolves only after that commit. No timer,
    // so a lone create waits for nothing, and no cap of our own on batches in flight: the pool's
    // limit and its connection timeout bound them, and the query timeout bounds a batch the server
    // took but never answers (a hung or partitioned database), so every create ends in time.
    this.creates = new Batcher({
      batchingFunction: (plants) => this.createMany(plants),
      maxBatchSize: MAX_BATCH,
      delayFunction: () => new Promise<void>((resolve) => setImmediate(resolve)),
    });
  }

  /** Applies the migrations, retrying with backoff while the server is unreachable. */
  async onModuleInit(): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      try {
        await migrate(this.pool);
        return;
      } catch (error) {
        if (!isUnavailable(error)) throw error;
        if (attempt >= this.options.connectAttempts) {
          throw new StorageUnavailableError(
            `PostgreSQL is unreachable after ${attempt} attempt(s): ${(error as Error).message}`,
            { cause: error },
          );
        }
        const delay = Math.min(200 * 2 ** (attempt - 1), MAX_BACKOFF_MS);
        this.logger.warn(
          `PostgreSQL is unreachable (attempt ${attempt} of ${this.options.connectAttempts}); retrying in ${delay} ms`,
        );
        await sleep(delay);
      }
    }
  }

  async onModuleDestroy(): Promise<void> {
    await this.creates.idlePromise();
    await this.pool.end();
  }

  async ping(): Promise<void> {
    await this.query('answer the readiness check', 'SELECT 1 FROM schema_migrations LIMIT 1', []);
  }

  async list({ limit, after }: PageQuery): Promise<Plant[]> {
    const { rows } =
      after === undefined
        ? await this.query<PlantRow>('read plants', POSTGRES_PAGE_SQL.first, [limit])
        : await this.query<PlantRow>('read plants', POSTGRES_PAGE_SQL.after, [after.toString(), limit]);
    return rows.map(toPlant);
  }

  async get(id: bigint): Promise<Plant | undefined> {
    const { rows } = await this.query<PlantRow>(
      'read a plant',
      `SELECT ${PLANT_COLUMNS} FROM plants WHERE id = $1::bigint`,
      [id.toString()],
    );
    return rows.length === 0 ? undefined : toPlant(rows[0]);
  }

  async delete(id: bigint): Promise<boolean> {
    // Not retried after a lost connection: a delete that committed would then answer "not found".
    const { rowCount } = await this.query('delete a plant', 'DELETE FROM plants WHERE id = $1::bigint', [
      id.toString(),
    ]);
    return rowCount === 1;
  }

  create(plant: Plant): Promise<CreateResult> {
    const result = this.creates.getResult(plant);
    this.creates.send(); // skips promise-batcher's timer; its delay function still gathers one turn
    return result;
  }

  /**
   * Stores a batch in one statement and one commit, each plant resolved on its own: a conflict
   * fails only its plant. A lost connection is retried once; a timeout is not (the server took the
   * batch, and a retry would wait as long again); any other failure sends each plant alone, so one
   * plant the server refuses does not fail the others.
   */
  private async createMany(plants: readonly Plant[]): Promise<(CreateResult | Error)[]> {
    try {
      return await this.retriedOnceIfUnavailable(() => this.insertOrCompare(plants));
    } catch (error) {
      const failure = this.translate(error, 'store a plant');
      // An unreachable or timed-out database would fail each plant alone just the same.
      if (plants.length > 1 && !(failure instanceof StorageUnavailableError)) {
        return (await Promise.all(plants.map((plant) => this.createMany([plant])))).flat();
      }
      return plants.map(() => failure);
    }
  }

  private async retriedOnceIfUnavailable<T>(run: () => Promise<T>): Promise<T> {
    try {
      return await run();
    } catch (error) {
      if (!isUnavailable(error)) throw error;
    }
    // Once more, on a fresh connection: the insert is idempotent, so retrying after a lost
    // connection is safe even if the first one committed.
    return run();
  }

  /**
   * One insert for the batch, then one read of the rows that were already there. A row the insert
   * saw can be deleted before the read (a concurrent DELETE): that plant has lost nothing, it is
   * simply tried again, and becomes a new create or meets whatever was stored since.
   */
  private async insertOrCompare(plants: readonly Plant[], round = 1): Promise<(CreateResult | Error)[]> {
    const ids = plants.map((plant) => plant.id.toString());
    // Rows go in id order, so two batches with ids in common (two instances, say) take their locks
    // in the same order and cannot deadlock; within one id, in the order they came. Unnamed
    // statements (no server-side prepared ones), so PgBouncer in transaction mode works.
    const inserted = await this.timedQuery<PlantRow>(
      `INSERT INTO plants (id, name, tag)
       SELECT id, name, tag
       FROM unnest($1::bigint[], $2::text[], $3::text[]) WITH ORDINALITY AS batch (id, name, tag, position)
       ORDER BY id, position
       ON CONFLICT (id) DO NOTHING
       RETURNING ${PLANT_COLUMNS}`,
      [ids, plants.map((plant) => plant.name), plants.map((plant) => plant.tag ?? null)],
    );
    const stored = new Map(inserted.rows.map((row) => [row.id, toPlant(row)]));
    const created = new Set(stored.keys());
    const missing = ids.filter((id) => !stored.has(id));
    if (missing.length > 0) {
      // A separate statement on purpose: under READ COMMITTED it sees the rows a concurrent
      // transaction committed, which a CTE sharing the INSERT's snapshot would miss.
      const { rows } = await this.timedQuery<PlantRow>(
        `SELECT ${PLANT_COLUMNS} FROM plants WHERE id = ANY($1::bigint[])`,
        [missing],
      );
      for (const row of rows) stored.set(row.id, toPlant(row));
    }
    const results: (CreateResult | Error | undefined)[] = plants.map((plant, i) => {
      const existing = stored.get(ids[i]);
      if (existing === undefined) return undefined; // deleted between the insert and the read
      if (!samePlant(existing, plant)) return new PlantConflictError(plant.id);
      // The same plant twice in one batch: the first is the one created, the next a replay.
      return { plant: existing, created: created.delete(ids[i]) };
    });
    const vanished = plants.filter((_plant, i) => results[i] === undefined);
    if (vanished.length === 0) return results as (CreateResult | Error)[];
    if (round >= MAX_VANISHED_ROUNDS) {
      const failure = this.translate(new Error(`plants kept vanishing for ${round} rounds`), 'store a plant');
      return results.map((result) => result ?? failure);
    }
    const retried = await this.insertOrCompare(vanished, round + 1);
    return results.map((result) => result ?? retried.shift()!);
  }

  /**
   * A query that fails with pg's "Query read timeout" once the server has held it for
   * `queryTimeoutMs`; the pool then closes that connection instead of lending it out again.
   */
  private timedQuery<R extends QueryResultRow>(text: string, values: unknown[]): Promise<QueryResult<R>> {
    // pg reads `query_timeout` per query; @types/pg's QueryConfig does not declare it.
    const config: QueryConfig & { query_timeout: number } = {
      text,
      values,
      query_timeout: this.options.queryTimeoutMs,
    };
    return this.pool.query<R>(config);
  }

  /** A timed query whose failure is translated for the port: `action` says what failed, for the log. */
  private async query<R extends QueryResultRow>(action: string, text: string, values: unknown[]) {
    try {
      return await this.timedQuery<R>(text, values);
    } catch (error) {
      throw this.translate(error, action);
    }
  }

  private translate(error: unknown, action: string): Error {
    if (error instanceof PlantConflictError) return error;
    if (isQueryTimeout(error)) {
      return new StorageTimeoutError(`PostgreSQL did not answer within ${this.options.queryTimeoutMs} ms`, {
        cause: error,
      });
    }
    if (isUnavailable(error)) return new StorageUnavailableError('PostgreSQL is unavailable', { cause: error });
    return new StorageError(`PostgreSQL failed to ${action}`, { cause: error });
  }
}

function toPlant(row: PlantRow): Plant {
  const id = BigInt(row.id);
  return row.tag === null ? { id, name: row.name } : { id, name: row.name, tag: row.tag };
}
