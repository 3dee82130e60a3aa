import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { OnModuleDestroy, OnModuleInit } from '@nestjs/common';
import Database from 'better-sqlite3';
import { Plant, samePlant } from '../plant';
import { PlantConflictError } from './plant-conflict.error';
import { CreateResult, PageQuery, PlantsRepository } from './plants.repository';
import { SQLITE_MIGRATIONS } from './sqlite-migrations';
import { StorageError } from './storage.error';

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

/** Plants in an embedded SQLite file (WAL, fsync on every commit). */
export class SqlitePlantsRepository implements PlantsRepository, OnModuleInit, OnModuleDestroy {
  private db?: Database.Database;
  private statements?: ReturnType<typeof prepare>;

  constructor(private readonly path: string) {}

  /** Opens the file (creating its folder) and brings the schema up to date. */
  onModuleInit(): void {
    mkdirSync(dirname(this.path), { recursive: true });
    const db = new Database(this.path);
    db.pragma('journal_mode = WAL');
    // FULL: a commit is on disk before the 200 leaves, so neither kill -9 nor power loss loses it.
    db.pragma('synchronous = FULL');
    db.pragma('busy_timeout = 5000');
    db.defaultSafeIntegers(true);
    migrate(db);
    this.statements = prepare(db);
    this.db = db;
  }

  onModuleDestroy(): void {
    this.db?.close();
    this.db = undefined;
    this.statements = undefined;
  }

  async ping(): Promise<void> {
    this.run('SQLite store is not usable', (s) => s.select.get(0n));
  }

  async create(plant: Plant): Promise<CreateResult> {
    const stored = this.run('SQLite failed to store a plant', (s) => s.createOrFind(plant));
    if (stored === undefined) return { plant, created: true };
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

  /** Runs `work` on the open store, turning a driver failure into a StorageError with `message`. */
  private run<T>(message: string, work: (statements: ReturnType<typeof prepare>) => T): T {
    try {
      if (!this.statements) throw new Error('SQLite store is not open');
      return work(this.statements);
    } catch (error) {
      throw new StorageError(message, { cause: error });
    }
  }
}

function prepare(db: Database.Database) {
  const insert = db.prepare<[bigint, string, string | null]>(
    'INSERT INTO plants (id, name, tag) VALUES (?, ?, ?) ON CONFLICT (id) DO NOTHING',
  );
  const select = db.prepare<[bigint], PlantRow>('SELECT id, name, tag FROM plants WHERE id = ?');
  // The insert and the read of a row that was already there are one write transaction, so no
  // delete (from another connection to the file) can come between them: the read always finds it.
  const insertOrFind = db.transaction((plant: Plant): PlantRow | undefined =>
    insert.run(plant.id, plant.name, plant.tag ?? null).changes === 1 ? undefined : select.get(plant.id),
  );
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

/** Applies the missing migrations in one write transaction, so concurrent starters serialise. */
function migrate(db: Database.Database): void {
  db.exec(`CREATE TABLE IF NOT EXISTS schema_migrations (
             version    INTEGER PRIMARY KEY,
             name       TEXT NOT NULL,
             applied_at TEXT NOT NULL
           ) STRICT`);
  const latest = SQLITE_MIGRATIONS[SQLITE_MIGRATIONS.length - 1].version;
  db.transaction(() => {
    const applied = new Set(
      db
        .prepare('SELECT version FROM schema_migrations')
        .pluck()
        .all()
        .map((version) => Number(version)),
    );
    const newest = Math.max(0, ...applied);
    if (newest > latest) {
      throw new Error(`The SQLite database has schema version ${newest}, newer than this build knows (${latest})`);
    }
    const record = db.prepare('INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)');
    for (const migration of SQLITE_MIGRATIONS) {
      if (applied.has(migration.version)) continue;
      db.exec(migration.sql);
      record.run(migration.version, migration.name, new Date().toISOString());
    }
  }).immediate();
}
