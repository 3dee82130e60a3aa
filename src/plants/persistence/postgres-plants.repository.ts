import { OnModuleDestroy } from '@nestjs/common';
import { PoolClient, QueryResult } from 'pg';
import { isUnavailable } from '../../database/postgres-errors';
import { PostgresDatabase, PostgresTransaction } from '../../database/postgres-database';
import { TurnBatcher } from '../../database/turn-batcher';
import { StorageUnavailableError } from '../../database/storage-unavailable.error';
import { Plant, samePlant } from '../plant';
import { rememberContext } from '../../platform/trace-context';
import { PlantConflictError } from './plant-conflict.error';
import { PlantEvents } from '../plant-events';
import { CreateResult, PageQuery, PlantsRepository } from './plants.repository';

interface PlantRow {
  id: string;
  name: string;
  tag: string | null;
}

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
export class PostgresPlantsRepository implements PlantsRepository, OnModuleDestroy {
  private readonly creates: TurnBatcher<Plant, CreateResult>;

  constructor(
    private readonly database: PostgresDatabase,
    private readonly hook?: PlantEvents,
  ) {
    // Group commit: the creates that reach the repository in one turn of the event loop go to the
    // database as one statement and one commit, and each resolves only after that commit. No timer,
    // so a lone create waits for nothing, and no cap of our own on batches in flight: the pool's
    // limit and its connection timeout bound them, and the query timeout bounds a batch the server
    // took but never answers (a hung or partitioned database), so every create ends in time.
    this.creates = new TurnBatcher((plants) => this.createMany(plants), MAX_BATCH);
  }

  /** Waits for the batches in flight; the database module closes the pool after this. */
  async onModuleDestroy(): Promise<void> {
    await this.creates.idle();
  }

  async list({ limit, after }: PageQuery): Promise<Plant[]> {
    const { rows } =
      after === undefined
        ? await this.database.query<PlantRow>('read plants', POSTGRES_PAGE_SQL.first, [limit])
        : await this.database.query<PlantRow>('read plants', POSTGRES_PAGE_SQL.after, [after.toString(), limit]);
    return rows.map(toPlant);
  }

  async get(id: bigint): Promise<Plant | undefined> {
    const { rows } = await this.database.query<PlantRow>(
      'read a plant',
      `SELECT ${PLANT_COLUMNS} FROM plants WHERE id = $1::bigint`,
      [id.toString()],
    );
    return rows.length === 0 ? undefined : toPlant(rows[0]);
  }

  async delete(id: bigint): Promise<boolean> {
    // Not retried after a lost connection: a delete that committed would then answer "not found".
    const { rowCount } = await this.database.query('delete a plant', 'DELETE FROM plants WHERE id = $1::bigint', [
      id.toString(),
    ]);
    return rowCount === 1;
  }

  create(plant: Plant): Promise<CreateResult> {
    rememberContext(plant);
    return this.creates.submit(plant);
  }

  /**
   * Stores a batch in one statement and one commit, each plant resolved on its own: a conflict
   * fails only its plant. A lost connection is retried once; a timeout is not (the server took the
   * batch, and a retry would wait as long again); any other failure splits the batch in halves,
   * tried one after the other, so one plant the server refuses does not fail the others, and a
   * failed batch of 500 costs about 2·log2(500) statements on one connection at a time, never 500
   * transactions at once on the pool.
   */
  private async createMany(plants: readonly Plant[]): Promise<(CreateResult | Error)[]> {
    try {
      return await this.retriedOnceIfUnavailable(() => this.insertOrCompare(plants));
    } catch (error) {
      const failure = this.database.translate(error, 'store a plant');
      // An unreachable or timed-out database would fail each half just the same.
      if (plants.length > 1 && !(failure instanceof StorageUnavailableError)) {
        const half = Math.ceil(plants.length / 2);
        const first = await this.createMany(plants.slice(0, half));
        return [...first, ...(await this.createMany(plants.slice(half)))];
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
    const inserted = await this.insert(plants, ids);
    const stored = new Map(inserted.rows.map((row) => [row.id, toPlant(row)]));
    const created = new Set(stored.keys());
    const missing = ids.filter((id) => !stored.has(id));
    if (missing.length > 0) {
      // A separate statement on purpose: under READ COMMITTED it sees the rows a concurrent
      // transaction committed, which a CTE sharing the INSERT's snapshot would miss.
      const { rows } = await this.database.timedQuery<PlantRow>(
        this.database.pool,
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
      const failure = this.database.translate(new Error(`plants kept vanishing for ${round} rounds`), 'store a plant');
      return results.map((result) => result ?? failure);
    }
    const retried = await this.insertOrCompare(vanished, round + 1);
    return results.map((result) => result ?? retried.shift()!);
  }

  /**
   * One INSERT for the batch, committed with what must commit with new plants (the webhook outbox):
   * in one transaction when the hook is there, as one autocommitted statement otherwise.
   */
  private async insert(plants: readonly Plant[], ids: string[]): Promise<QueryResult<PlantRow>> {
    const statement = (on: PoolClient | PostgresDatabase['pool']) =>
      // Rows go in id order, so two batches with ids in common (two instances, say) take their locks
      // in the same order and cannot deadlock; within one id, in the order they came. Unnamed
      // statements (no server-side prepared ones), so PgBouncer in transaction mode works.
      this.database.timedQuery<PlantRow>(
        on,
        `INSERT INTO plants (id, name, tag)
         SELECT id, name, tag
         FROM unnest($1::bigint[], $2::text[], $3::text[]) WITH ORDINALITY AS batch (id, name, tag, position)
         ORDER BY id, position
         ON CONFLICT (id) DO NOTHING
         RETURNING ${PLANT_COLUMNS}`,
        [ids, plants.map((plant) => plant.name), plants.map((plant) => plant.tag ?? null)],
      );
    const hook = this.hook;
    if (hook === undefined) return statement(this.database.pool);
    let transaction: PostgresTransaction | undefined;
    const inserted = await this.database.transaction(async (client) => {
      const result = await statement(client);
      if (result.rows.length > 0) {
        // The plants as they came (not rebuilt from the rows): each carries its request's trace context.
        const byId = new Map<string, Plant>();
        plants.forEach((plant, i) => byId.has(ids[i]) || byId.set(ids[i], plant));
        const created = result.rows.map((row) => byId.get(row.id) ?? toPlant(row));
        transaction = new PostgresTransaction(this.database, client);
        await hook.created(transaction, created);
      }
      return result;
    });
    if (transaction !== undefined) hook.committed(transaction);
    return inserted;
  }
}

function toPlant(row: PlantRow): Plant {
  const id = BigInt(row.id);
  return row.tag === null ? { id, name: row.name } : { id, name: row.name, tag: row.tag };
}
