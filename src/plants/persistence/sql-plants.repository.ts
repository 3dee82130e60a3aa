import { Injectable, OnModuleDestroy } from '@nestjs/common';
import { SpanKind, trace } from '@opentelemetry/api';
import { CompiledQuery, Kysely, sql } from 'kysely';
import { Database } from '../../database/database';
import { StatementResult, Transaction } from '../../database/transaction';
import { PostgresDatabase } from '../../database/postgres-database';
import { isUnavailable } from '../../database/postgres-errors';
import { fixedText, prepareQuery } from '../../database/prepared-query';
import { retryWhileBusy, SqliteDatabase } from '../../database/sqlite-database';
import { sqliteFailure } from '../../database/sqlite-errors';
import { StorageUnavailableError } from '../../database/storage-unavailable.error';
import { int64Of, Tables } from '../../database/tables';
import { TurnBatcher } from '../../database/turn-batcher';
import { contextOf, inSpan, rememberContext } from '../../platform/trace-context';
import { Plant, samePlant } from '../plant';
import { PlantEvents } from '../plant-events';
import { PlantConflictError } from './plant-conflict.error';
import { CreateResult, PageQuery, PlantsRepository } from './plants.repository';
import './plants.tables';

interface PlantRow {
  id: bigint | string;
  name: string;
  tag: string | null;
}

/** A write waiting for SQLite's next group commit: a create, or a delete. */
type Write = { readonly create: Plant } | { readonly remove: bigint };
/** A create's result, a delete's "was there a row", or the error of that write alone. */
type WriteOutcome = CreateResult | boolean | Error;

/** Writes per batch at most: bounds how long one SQLite commit holds the event loop, and one PostgreSQL statement's work. */
const MAX_BATCH = 500;
/**
 * Rounds of insert-or-read for a plant whose stored row was deleted between the two on PostgreSQL
 * (see `insertOrComparePostgres`). Each round is a fresh race that the plant loses only if yet
 * another create and delete of its id slip in between two statements, so the second round settles it.
 */
const MAX_VANISHED_ROUNDS = 10;

/**
 * The queries of the plants table, written once. Keyset pages on the primary key: a range search
 * from the cursor, whatever the depth, never an OFFSET (the repository tests read their plans).
 * Compiled once each (`prepareQuery`), as they run once per request.
 */
export function plantQueries(db: Kysely<Tables>) {
  return {
    firstPage: prepareQuery<{ limit: number }, PlantRow>(({ limit }) =>
      db.selectFrom('plants').select(['id', 'name', 'tag']).orderBy('id').limit(limit).compile(),
    ),
    pageAfter: prepareQuery<{ after: bigint; limit: number }, PlantRow>(({ after, limit }) =>
      db
        .selectFrom('plants')
        .select(['id', 'name', 'tag'])
        .where('id', '>', after)
        .orderBy('id')
        .limit(limit)
        .compile(),
    ),
    byId: prepareQuery<{ id: bigint }, PlantRow>(({ id }) =>
      db.selectFrom('plants').select(['id', 'name', 'tag']).where('id', '=', id).compile(),
    ),
    insert: prepareQuery<{ id: bigint; name: string; tag: string | null }, never>(({ id, name, tag }) =>
      db
        .insertInto('plants')
        .values({ id, name, tag })
        .onConflict((conflict) => conflict.column('id').doNothing())
        .compile(),
    ),
    remove: prepareQuery<{ id: bigint }, never>(({ id }) => db.deleteFrom('plants').where('id', '=', id).compile()),
  };
}

/**
 * The plants, in whichever store `DatabaseModule` chose. Reads and deletes are one query for both
 * stores; creates are group-committed in each store's own way (named methods, below):
 *
 * - SQLite (`writeBatchSqlite`): the creates **and deletes** that reach the repository in one turn of
 *   the event loop are one `BEGIN IMMEDIATE` transaction, in the order they came, run synchronously
 *   with one commit, so one fsync (`synchronous=FULL` stays: each is answered only after it). If a
 *   statement fails, the transaction is rolled back and each write of the batch runs alone. Reads
 *   run at once on the same connection: a batch runs to its end in one go, so a read never sees half of one.
 * - PostgreSQL (`createBatchPostgres`): the creates of one turn are one `INSERT … SELECT FROM unnest(…)`
 *   and one commit; a delete is one statement of its own (not retried after a lost connection: a
 *   delete that committed would then answer "not found").
 *
 * New plants commit together with what `PlantEvents` adds (the webhook outbox): to SQLite's transaction,
 * or to PostgreSQL's one insert statement.
 */
@Injectable()
export class SqlPlantsRepository implements PlantsRepository, OnModuleDestroy {
  private readonly queries: ReturnType<typeof plantQueries>;
  private readonly writes: DialectWrites;

  constructor(
    private readonly database: Database,
    db: Kysely<Tables>,
    private readonly events: PlantEvents,
  ) {
    this.queries = plantQueries(db);
    this.writes = database.choose({
      sqlite: (store) => this.sqliteWrites(store),
      postgres: (store) => this.postgresWrites(store),
    });
  }

  /** Waits for the batches in flight; the database module closes the store after this. */
  async onModuleDestroy(): Promise<void> {
    await this.writes.idle();
  }

  create(plant: Plant): Promise<CreateResult> {
    rememberContext(plant);
    return this.writes.create(plant);
  }

  delete(id: bigint): Promise<boolean> {
    return this.writes.delete(id);
  }

  async list({ limit, after }: PageQuery): Promise<Plant[]> {
    const query = after === undefined ? this.queries.firstPage({ limit }) : this.queries.pageAfter({ after, limit });
    const { rows } = await this.database.execute('read plants', query);
    return rows.map(toPlant);
  }

  async get(id: bigint): Promise<Plant | undefined> {
    const { rows } = await this.database.execute('read a plant', this.queries.byId({ id }));
    return rows.length === 0 ? undefined : toPlant(rows[0]);
  }

  // SQLite ------------------------------------------------------------------------------------

  /** SQLite: creates and deletes group-committed together, in the order they came. */
  private sqliteWrites(store: SqliteDatabase): DialectWrites {
    // Gathered until a turn brings nothing new: each commit blocks the loop for an fsync, so the
    // fewer commits per write, the more writes per second (see TurnBatcher's `untilQuiet`).
    const batcher = new TurnBatcher<Write, CreateResult | boolean>(
      (writes) => this.writeBatchSqlite(store, writes),
      MAX_BATCH,
      { untilQuiet: true },
    );
    return {
      create: async (plant) => (await batcher.submit({ create: plant })) as CreateResult,
      delete: async (id) => (await batcher.submit({ remove: id })) as boolean,
      idle: () => batcher.idle(),
    };
  }

  /**
   * One transaction for the batch, tried again off the event loop while another process holds the
   * file's write lock (`retryWhileBusy`). When the file cannot be written (still locked, disk full or
   * failing), every write of the batch fails at once with a 503, never retried one by one; any other
   * failure is taken to be one write's own, and each write runs alone so that only it fails.
   */
  private async writeBatchSqlite(store: SqliteDatabase, writes: readonly Write[]): Promise<WriteOutcome[]> {
    let outcome: { outcomes: WriteOutcome[]; committed?: Transaction };
    try {
      // One span for the group commit, in the trace of its first create, linked to the others'.
      const traced = writes.flatMap((write) => {
        const remembered = 'create' in write ? contextOf(write.create) : undefined;
        return remembered === undefined ? [] : [remembered];
      });
      outcome = await retryWhileBusy(() =>
        inSpan(
          'sqlite group commit',
          {
            kind: SpanKind.CLIENT,
            attributes: {
              'db.system': 'sqlite',
              'db.operation': 'transaction',
              'plant_store.batch_size': writes.length,
            },
            links: traced.slice(1).flatMap((other) => {
              const span = trace.getSpan(other);
              return span === undefined ? [] : [{ context: span.spanContext() }];
            }),
          },
          traced[0],
          () => {
            try {
              return store.transaction((transaction) => this.applySqlite(transaction, writes));
            } catch (error) {
              throw sqliteFailure('SQLite failed to store or delete plants', error);
            }
          },
        ),
      );
    } catch (error) {
      const cause = (error as Error).cause;
      if (writes.length === 1 || error instanceof StorageUnavailableError) {
        return writes.map((write) => sqliteFailure(failureMessage(write), cause));
      }
      const alone: WriteOutcome[] = [];
      for (const write of writes) alone.push(...(await this.writeBatchSqlite(store, [write])));
      return alone;
    }
    if (outcome.committed !== undefined) this.events.committed(outcome.committed);
    return outcome.outcomes;
  }

  /**
   * The writes of one batch inside its SQLite transaction, synchronously: the writes, what must
   * commit with new plants (the webhook outbox) and the reads of rows that were already there, so
   * no other connection can come between an insert and its read, and an outbox row exists exactly
   * when its plant was inserted.
   */
  private applySqlite(
    transaction: Transaction,
    writes: readonly Write[],
  ): { outcomes: WriteOutcome[]; committed?: Transaction } {
    const run = <Row>(query: CompiledQuery<Row>) => transaction.execute(query) as StatementResult<Row>;
    const inserted: Plant[] = [];
    const outcomes = writes.map((write): WriteOutcome => {
      if ('remove' in write) return run(this.queries.remove({ id: write.remove })).affectedRows === 1;
      const plant = write.create;
      if (run(this.queries.insert({ id: plant.id, name: plant.name, tag: plant.tag ?? null })).affectedRows === 1) {
        inserted.push(plant);
        return { plant, created: true };
      }
      const existing = toPlant(run(this.queries.byId({ id: plant.id })).rows[0]);
      return samePlant(existing, plant) ? { plant: existing, created: false } : new PlantConflictError(plant.id);
    });
    if (inserted.length === 0) return { outcomes };
    // A promise here would finish after the commit: the port's contract forbids it on SQLite.
    if (this.events.created(transaction, inserted) instanceof Promise) {
      throw new Error('PlantEvents.created must finish synchronously in an SQLite transaction');
    }
    return { outcomes, committed: transaction };
  }

  // PostgreSQL --------------------------------------------------------------------------------

  /** PostgreSQL: creates group-committed as one statement; a delete alone. */
  private postgresWrites(store: PostgresDatabase): DialectWrites {
    const batcher = new TurnBatcher<Plant, CreateResult>(
      (plants) => this.createBatchPostgres(store, plants),
      MAX_BATCH,
    );
    return {
      create: (plant) => batcher.submit(plant),
      // Not retried after a lost connection: a delete that committed would then answer "not found".
      delete: async (id) =>
        (await this.database.execute('delete a plant', this.queries.remove({ id }))).affectedRows === 1,
      idle: () => batcher.idle(),
    };
  }

  /**
   * Stores a batch in one statement and one commit, each plant resolved on its own: a conflict
   * fails only its plant. A lost connection is retried once; a timeout is not (the server took the
   * batch, and a retry would wait as long again); any other failure splits the batch in halves,
   * tried one after the other, so one plant the server refuses does not fail the others, and a
   * failed batch of 500 costs about 2·log2(500) statements on one connection at a time, never 500
   * transactions at once on the pool.
   */
  private async createBatchPostgres(
    store: PostgresDatabase,
    plants: readonly Plant[],
  ): Promise<(CreateResult | Error)[]> {
    try {
      return await retriedOnceIfUnavailable(() => this.insertOrComparePostgres(store, plants));
    } catch (error) {
      const failure = store.translate(error, 'store a plant');
      // An unreachable or timed-out database would fail each half just the same.
      if (plants.length > 1 && !(failure instanceof StorageUnavailableError)) {
        const half = Math.ceil(plants.length / 2);
        const first = await this.createBatchPostgres(store, plants.slice(0, half));
        return [...first, ...(await this.createBatchPostgres(store, plants.slice(half)))];
      }
      return plants.map(() => failure);
    }
  }

  /**
   * One insert for the batch, then one read of the rows that were already there. A row the insert
   * saw can be deleted before the read (a concurrent DELETE): that plant has lost nothing, it is
   * simply tried again, and becomes a new create or meets whatever was stored since.
   */
  private async insertOrComparePostgres(
    store: PostgresDatabase,
    plants: readonly Plant[],
    round = 1,
  ): Promise<(CreateResult | Error)[]> {
    const inserted = await this.insertBatchPostgres(store, plants);
    const stored = new Map(inserted.map((row) => [int64Of(row.id), toPlant(row)]));
    const created = new Set(stored.keys());
    const missing = plants.filter((plant) => !stored.has(plant.id)).map((plant) => plant.id.toString());
    if (missing.length > 0) {
      // A separate statement on purpose: under READ COMMITTED it sees the rows a concurrent
      // transaction committed, which a CTE sharing the INSERT's snapshot would miss.
      const { rows } = await store.executeOn(
        store.pool,
        sql<PlantRow>`SELECT id, name, tag FROM plants WHERE id = ANY(${missing}::bigint[])`.compile(store.kysely),
      );
      for (const row of rows) stored.set(int64Of(row.id), toPlant(row));
    }
    const results: (CreateResult | Error | undefined)[] = plants.map((plant) => {
      const existing = stored.get(plant.id);
      if (existing === undefined) return undefined; // deleted between the insert and the read
      if (!samePlant(existing, plant)) return new PlantConflictError(plant.id);
      // The same plant twice in one batch: the first is the one created, the next a replay.
      return { plant: existing, created: created.delete(plant.id) };
    });
    const vanished = plants.filter((_plant, i) => results[i] === undefined);
    if (vanished.length === 0) return results as (CreateResult | Error)[];
    if (round >= MAX_VANISHED_ROUNDS) {
      const failure = store.translate(new Error(`plants kept vanishing for ${round} rounds`), 'store a plant');
      return results.map((result) => result ?? failure);
    }
    const retried = await this.insertOrComparePostgres(store, vanished, round + 1);
    return results.map((result) => result ?? retried.shift()!);
  }

  /**
   * PostgreSQL's batch insert: one autocommitted statement, one round trip, whatever the batch: an
   * `INSERT … SELECT FROM unnest(…)` (three array parameters whatever its size) as the CTE `inserted`,
   * followed by what must commit with new plants (`PlantEvents.createdInStatement`: the webhook
   * outbox's CTEs, which read `inserted`). Rows go in id order, so two batches with ids in common (two
   * instances, say) take their locks in the same order and cannot deadlock; within one id, in the
   * order they came. Its text is fixed for the process's wiring (the values are the arrays), so it is
   * marked `fixedText` and runs as a named prepared statement: parsed and planned once per connection.
   */
  private async insertBatchPostgres(store: PostgresDatabase, plants: readonly Plant[]): Promise<PlantRow[]> {
    // The plants as they came (not rebuilt from the rows): each carries its request's trace context.
    const firsts = new Map<bigint, Plant>();
    for (const plant of plants) if (!firsts.has(plant.id)) firsts.set(plant.id, plant);
    const events = this.events.createdInStatement(sql.table('inserted'), [...firsts.values()]);
    const statement = sql<PlantRow & { events: unknown }>`
      WITH inserted AS (
        INSERT INTO plants (id, name, tag)
        SELECT id, name, tag
        FROM unnest(${plants.map((plant) => plant.id.toString())}::bigint[], ${plants.map((plant) => plant.name)}::text[],
                    ${plants.map((plant) => plant.tag ?? null)}::text[]) WITH ORDINALITY AS batch (id, name, tag, position)
        ORDER BY id, position
        ON CONFLICT (id) DO NOTHING
        RETURNING id, name, tag)
      ${events.ctes}
      SELECT id, name, tag, ${events.outcome} AS events FROM inserted`.compile(store.kysely);
    const { rows } = await store.executeOn(store.pool, fixedText(statement));
    if (rows.length > 0) events.committed(rows[0].events);
    return rows;
  }
}

/** How one store writes: SQLite batches creates and deletes together, PostgreSQL only creates. */
interface DialectWrites {
  create(plant: Plant): Promise<CreateResult>;
  delete(id: bigint): Promise<boolean>;
  idle(): Promise<void>;
}

async function retriedOnceIfUnavailable<T>(run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (error) {
    if (!isUnavailable(error)) throw error;
  }
  // Once more, on a fresh connection: the insert is idempotent, so retrying after a lost
  // connection is safe even if the first one committed.
  return run();
}

function failureMessage(write: Write): string {
  return 'create' in write ? 'SQLite failed to store a plant' : 'SQLite failed to delete a plant';
}

function toPlant(row: PlantRow): Plant {
  const id = int64Of(row.id);
  return row.tag === null ? { id, name: row.name } : { id, name: row.name, tag: row.tag };
}
