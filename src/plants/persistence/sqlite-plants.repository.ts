import BetterSqlite3 from 'better-sqlite3';
import { SqliteDatabase } from '../../database/sqlite-database';
import { StorageError } from '../../database/storage.error';
import { Plant, samePlant } from '../plant';
import { PlantConflictError } from './plant-conflict.error';
import { PlantsCreatedHook } from './plants-created.hook';
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

/** Plants in the embedded SQLite file of `SqliteDatabase`. */
export class SqlitePlantsRepository implements PlantsRepository {
  private statements?: ReturnType<typeof prepare>;

  constructor(
    private readonly database: SqliteDatabase,
    private readonly hook?: PlantsCreatedHook,
  ) {}

  async create(plant: Plant): Promise<CreateResult> {
    const stored = this.run('SQLite failed to store a plant', (s) => s.createOrFind(plant));
    if (stored === undefined) {
      this.hook?.committed();
      return { plant, created: true };
    }
    const existing = toPlant(stored);
    if (!samePlant(existing, plant)) throw new PlantConflictError(plant.id);
    return { plant: existing, created: false };
  }

  async list({ limit, after }: PageQuery): Promise<Plant[]> {
    const rows = this.run('SQLite failed to read plants', (s) =>
      after === undefined ? s.first.all(limit) : s.after.all(after, limit),
    );
    return rows.map(toPlant);
  }

  async get(id: bigint): Promise<Plant | undefined> {
    const row = this.run('SQLite failed to read a plant', (s) => s.select.get(id));
    return row === undefined ? undefined : toPlant(row);
  }

  async delete(id: bigint): Promise<boolean> {
    return this.run('SQLite failed to delete a plant', (s) => s.remove.run(id).changes === 1);
  }

  /** Runs `work` on the prepared statements, turning a driver failure into a StorageError with `message`. */
  private run<T>(message: string, work: (statements: ReturnType<typeof prepare>) => T): T {
    try {
      // Prepared on first use: by then the database module has opened and migrated the file.
      this.statements ??= prepare(this.database.connection, this.hook);
      return work(this.statements);
    } catch (error) {
      throw new StorageError(message, { cause: error });
    }
  }
}

function prepare(db: BetterSqlite3.Database, hook: PlantsCreatedHook | undefined) {
  const insert = db.prepare<[bigint, string, string | null]>(
    'INSERT INTO plants (id, name, tag) VALUES (?, ?, ?) ON CONFLICT (id) DO NOTHING',
  );
  const select = db.prepare<[bigint], PlantRow>('SELECT id, name, tag FROM plants WHERE id = ?');
  // The insert, what must commit with it (the webhook outbox) and the read of a row that was already
  // there are one write transaction: no delete from another connection can come between the insert
  // and the read, and an outbox row exists exactly when its plant was inserted.
  const insertOrFind = db.transaction((plant: Plant): PlantRow | undefined => {
    if (insert.run(plant.id, plant.name, plant.tag ?? null).changes === 0) return select.get(plant.id);
    hook?.inSqlite(db, [plant]);
    return undefined;
  });
  return {
    select,
    /** The row already stored under the plant's id, or undefined when this plant was inserted. */
    createOrFind: (plant: Plant) => insertOrFind.immediate(plant),
    first: db.prepare<[number], PlantRow>(SQLITE_PAGE_SQL.first),
    after: db.prepare<[bigint, number], PlantRow>(SQLITE_PAGE_SQL.after),
    remove: db.prepare<[bigint]>('DELETE FROM plants WHERE id = ?'),
  };
}

function toPlant(row: PlantRow): Plant {
  return row.tag === null ? { id: row.id, name: row.name } : { id: row.id, name: row.name, tag: row.tag };
}
