import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { OnModuleDestroy, OnModuleInit } from '@nestjs/common';
import Database from 'better-sqlite3';
import { Plant, samePlant } from '../plant';
import { PlantConflictError } from './plant-conflict.error';
import { CreateResult, PlantsRepository } from './plants.repository';
import { SQLITE_MIGRATIONS } from './sqlite-migrations';
import { StorageError } from './storage.error';

interface PlantRow {
  id: bigint;
  name: string;
  tag: string | null;
}

/** Plants in an embedded SQLite file (WAL, fsync on every commit). */
export class SqlitePlantsRepository implements PlantsRepository, OnModuleInit, OnModuleDestroy {
  private db?: Database.Database;
  private insertStatement?: Database.Statement<[bigint, string, string | null]>;
  private selectStatement?: Database.Statement<[bigint], PlantRow>;

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
    this.insertStatement = db.prepare(
      'INSERT INTO plants (id, name, tag) VALUES (?, ?, ?) ON CONFLICT (id) DO NOTHING',
    );
    this.selectStatement = db.prepare('SELECT id, name, tag FROM plants WHERE id = ?');
    this.db = db;
  }

  onModuleDestroy(): void {
    this.db?.close();
    this.db = undefined;
  }

  async ping(): Promise<void> {
    try {
      this.statements().select.get(0n);
    } catch (error) {
      throw new StorageError('SQLite store is not usable', { cause: error });
    }
  }

  async create(plant: Plant): Promise<CreateResult> {
    let stored: PlantRow | undefined;
    try {
      // The primary key settles a race; rows are never updated, so the read after a skipped insert is stable.
      if (this.statements().insert.run(plant.id, plant.name, plant.tag ?? null).changes === 1) {
        return { plant, created: true };
      }
      stored = this.statements().select.get(plant.id);
    } catch (error) {
      throw new StorageError('SQLite failed to store a plant', { cause: error });
    }
    const existing = toPlant(stored!);
    if (!samePlant(existing, plant)) throw new PlantConflictError(plant.id);
    return { plant: existing, created: false };
  }

  private statements() {
    if (!this.insertStatement || !this.selectStatement) throw new Error('SQLite store is not open');
    return { insert: this.insertStatement, select: this.selectStatement };
  }
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
