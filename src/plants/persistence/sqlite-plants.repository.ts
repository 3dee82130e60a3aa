import { OnModuleDestroy } from '@nestjs/common';
import BetterSqlite3 from 'better-sqlite3';
import { retryWhileBusy, SqliteDatabase, SqliteTransaction } from '../../database/sqlite-database';
import { TurnBatcher } from '../../database/turn-batcher';
import { sqliteFailure } from '../../database/sqlite-errors';
import { StorageUnavailableError } from '../../database/storage-unavailable.error';
import { Plant, samePlant } from '../plant';
import { PlantConflictError } from './plant-conflict.error';
import { SpanKind, trace } from '@opentelemetry/api';
import { contextOf, inSpan, rememberContext } from '../../platform/trace-context';
import { PlantEvents } from '../plant-events';
import { CreateResult, PageQuery, PlantsRepository } from './plants.repository';

interface PlantRow {
  id: bigint;
  name: string;
  tag: string | null;
}

/**
 * Keyset pages on the INTEGER PRIMARY KEY (the rowid): a range search from the cursor, whatever the
 * depth, never an OFFSET. Exported for the test that reads their query plans.
 */
export const SQLITE_PAGE_SQL = {
  first: 'SELECT id, name, tag FROM plants ORDER BY id LIMIT ?',
  after: 'SELECT id, name, tag FROM plants WHERE id > ? ORDER BY id LIMIT ?',
} as const;

/** A write waiting for the next group commit: a create, or a delete. */
type Write = { readonly create: Plant } | { readonly remove: bigint };
/** A create's result, a delete's "was there a row", or the error of that write alone. */
type WriteOutcome = CreateResult | boolean | Error;

const READ_SPAN = { kind: SpanKind.CLIENT, attributes: { 'db.system': 'sqlite', 'db.operation': 'SELECT' } };

/** Writes per transaction at most: bounds how long one commit holds the event loop. */
const MAX_BATCH = 500;

/**
 * Plants in the embedded SQLite file of `SqliteDatabase`.
 *
 * Group commit: the creates and deletes that reach the repository in one turn of the event loop are
 * one `BEGIN IMMEDIATE` transaction, in the order they came, with one commit, so one fsync
 * (`synchronous=FULL` stays: each is answered only after that commit). Each write keeps its own
 * outcome: a conflict is a 409 for that plant only. If a statement fails, the transaction is rolled
 * back and each write of the batch runs alone, so one failure fails only its own request. Reads run
 * at once on the same connection: a batch runs to its end in one go, so a read never sees half of one.
 */
export class SqlitePlantsRepository implements PlantsRepository, OnModuleDestroy {
  private statements?: ReturnType<typeof prepare>;
  private readonly writes: TurnBatcher<Write, CreateResult | boolean>;

  constructor(
    private readonly database: SqliteDatabase,
    private readonly hook?: PlantEvents,
  ) {
    this.writes = new TurnBatcher((writes) => this.writeMany(writes), MAX_BATCH);
  }

  /** Waits for the batches in flight; the database module closes the file after this. */
  async onModuleDestroy(): Promise<void> {
    await this.writes.idle();
  }

  async create(plant: Plant): Promise<CreateResult> {
    rememberContext(plant);
    return (await this.writes.submit({ create: plant })) as CreateResult;
  }

  async list({ limit, after }: PageQuery): Promise<Plant[]> {
    // SQLite has no instrumentation of its own: the span says what the store did.
    const rows = inSpan('sqlite select plants', READ_SPAN, undefined, () =>
      this.run('SQLite failed to read plants', (s) =>
        after === undefined ? s.first.all(limit) : s.after.all(after, limit),
      ),
    );
    return rows.map(toPlant);
  }

  async get(id: bigint): Promise<Plant | undefined> {
    const row = inSpan('sqlite select plant', READ_SPAN, undefined, () =>
      this.run('SQLite failed to read a plant', (s) => s.select.get(id)),
    );
    return row === undefined ? undefined : toPlant(row);
  }

  async delete(id: bigint): Promise<boolean> {
    return (await this.writes.submit({ remove: id })) as boolean;
  }

  /**
   * One transaction for the batch, tried again off the event loop while another process holds the
   * file's write lock (`retryWhileBusy`). When the file cannot be written (still locked, disk full or
   * failing), every write of the batch fails at once with a 503, never retried one by one; any other
   * failure is taken to be one write's own, and each write runs alone so that only it fails.
   */
  private async writeMany(writes: readonly Write[]): Promise<WriteOutcome[]> {
    let outcomes: WriteOutcome[];
    try {
      // One span for the group commit, in the trace of its first create, linked to the others'.
      const traced = writes.flatMap((write) => {
        const remembered = 'create' in write ? contextOf(write.create) : undefined;
        return remembered === undefined ? [] : [remembered];
      });
      outcomes = await retryWhileBusy(() =>
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
          () => this.run('SQLite failed to store or delete plants', (s) => s.writeBatch(writes)),
        ),
      );
    } catch (error) {
      const cause = (error as Error).cause;
      if (writes.length === 1 || error instanceof StorageUnavailableError) {
        return writes.map((write) => sqliteFailure(failureMessage(write), cause));
      }
      const alone: WriteOutcome[] = [];
      for (const write of writes) alone.push(...(await this.writeMany([write])));
      return alone;
    }
    if (this.hook !== undefined && outcomes.some((outcome) => isCreated(outcome)))
      this.hook.committed(this.statements!.transaction);
    return outcomes;
  }

  /** Runs `work` on the prepared statements, turning a driver failure into a StorageError with `message`. */
  private run<T>(message: string, work: (statements: ReturnType<typeof prepare>) => T): T {
    try {
      // Prepared on first use: by then the database module has opened and migrated the file.
      this.statements ??= prepare(this.database.connection, this.hook);
      return work(this.statements);
    } catch (error) {
      throw sqliteFailure(message, error);
    }
  }
}

function prepare(db: BetterSqlite3.Database, hook: PlantEvents | undefined) {
  const transaction = new SqliteTransaction(db);
  const insert = db.prepare<[bigint, string, string | null]>(
    'INSERT INTO plants (id, name, tag) VALUES (?, ?, ?) ON CONFLICT (id) DO NOTHING',
  );
  const select = db.prepare<[bigint], PlantRow>('SELECT id, name, tag FROM plants WHERE id = ?');
  const remove = db.prepare<[bigint]>('DELETE FROM plants WHERE id = ?');
  // The writes, what must commit with new plants (the webhook outbox) and the reads of rows that were
  // already there are one write transaction: no other connection can come between an insert and its
  // read, and an outbox row exists exactly when its plant was inserted.
  const writeBatch = db.transaction((writes: readonly Write[]): WriteOutcome[] => {
    const inserted: Plant[] = [];
    const outcomes = writes.map((write): WriteOutcome => {
      if ('remove' in write) return remove.run(write.remove).changes === 1;
      const plant = write.create;
      if (insert.run(plant.id, plant.name, plant.tag ?? null).changes === 1) {
        inserted.push(plant);
        return { plant, created: true };
      }
      const existing = toPlant(select.get(plant.id)!);
      return samePlant(existing, plant) ? { plant: existing, created: false } : new PlantConflictError(plant.id);
    });
    // A promise here would finish after the commit: the port's contract forbids it on SQLite.
    if (inserted.length > 0 && hook?.created(transaction, inserted) instanceof Promise) {
      throw new Error('PlantEvents.created must finish synchronously in an SQLite transaction');
    }
    return outcomes;
  });
  return {
    transaction,
    select,
    /** The outcome of each write, in order, committed together. */
    writeBatch: (writes: readonly Write[]) => writeBatch.immediate(writes),
    first: db.prepare<[number], PlantRow>(SQLITE_PAGE_SQL.first),
    after: db.prepare<[bigint, number], PlantRow>(SQLITE_PAGE_SQL.after),
  };
}

function isCreated(outcome: WriteOutcome): boolean {
  return typeof outcome === 'object' && !(outcome instanceof Error) && outcome.created;
}

function failureMessage(write: Write): string {
  return 'create' in write ? 'SQLite failed to store a plant' : 'SQLite failed to delete a plant';
}

function toPlant(row: PlantRow): Plant {
  return row.tag === null ? { id: row.id, name: row.name } : { id: row.id, name: row.name, tag: row.tag };
}
