import { closeSync, fchmodSync, mkdirSync, openSync } from 'node:fs';
import { dirname } from 'node:path';
import { OnApplicationShutdown, OnModuleInit } from '@nestjs/common';
import BetterSqlite3 from 'better-sqlite3';
import { ConfigError } from '../config/config.error';
import { Database } from './database';
import { inVersionOrder, Migration, newerSchemaError } from './migration';
import { setTimeout as sleep } from 'node:timers/promises';
import { isBusy, sqliteFailure } from './sqlite-errors';
import { StorageError } from './storage.error';
import { Transaction } from './transaction';

/**
 * A write that finds another connection's write lock (an overlapping deploy, an operator's `sqlite3`
 * shell) fails at once with SQLITE_BUSY (busy_timeout 0: SQLite's own wait would hold the event loop),
 * and `retryWhileBusy` tries it again off the loop, every BUSY_RETRY_MS, for up to BUSY_WAIT_MS; then
 * it is a 503. Connections of this process never wait on each other (no transaction spans a turn).
 */
export const BUSY_WAIT_MS = 250;
const BUSY_RETRY_MS = 25;
const MIGRATION_BUSY_TIMEOUT_MS = 5000;

/** A write transaction open on an SQLite connection (synchronous: finish inside the call). */
export class SqliteTransaction extends Transaction {
  readonly kind = 'sqlite';

  constructor(readonly connection: BetterSqlite3.Database) {
    super();
  }
}

/** The embedded store: one SQLite file in WAL mode, fsync on every commit, 64-bit integers as bigint. */
export class SqliteDatabase extends Database implements OnModuleInit, OnApplicationShutdown {
  readonly kind = 'sqlite';
  get location(): string {
    return `file ${this.path}`;
  }
  private db?: BetterSqlite3.Database;
  private relaxed?: BetterSqlite3.Database;
  readonly migrations: Migration[];

  constructor(
    private readonly path: string,
    migrations: readonly Migration[],
  ) {
    super();
    this.migrations = inVersionOrder(migrations);
  }

  /** The open connection; features prepare their statements on it. Every commit is fsynced. */
  get connection(): BetterSqlite3.Database {
    if (!this.db) throw new Error('SQLite store is not open');
    return this.db;
  }

  /**
   * A second connection to the same file for bookkeeping whose loss on a power failure is harmless
   * (the webhook outbox's claims and results: a lost one only means a delivery is sent again, which
   * at-least-once allows). `synchronous = NORMAL`: its commits are not fsynced on their own, so they
   * do not block the event loop for a disk flush each; the next FULL commit on `connection` flushes
   * them too, as both write the same WAL. Opened on first use.
   */
  get relaxedConnection(): BetterSqlite3.Database {
    if (!this.db) throw new Error('SQLite store is not open');
    if (!this.relaxed) {
      this.relaxed = new BetterSqlite3(this.path);
      this.relaxed.pragma('synchronous = NORMAL');
      this.relaxed.pragma('busy_timeout = 0');
      this.relaxed.defaultSafeIntegers(true);
    }
    return this.relaxed;
  }

  /** Opens the file (creating its folder) and brings the schema up to date. */
  onModuleInit(): void {
    try {
      // Readable by the service's user only: the folder 0700 (when made here), the file 0600 (and so its
      // -wal and -shm, which SQLite creates with the file's mode). Existing ones keep their modes.
      mkdirSync(dirname(this.path), { recursive: true, mode: 0o700 });
    } catch (error) {
      // EEXIST (a part of the path is a file), EACCES…: say which setting leads there, and what is wrong.
      throw new ConfigError(
        `Invalid configuration: DATABASE_URL points at ${this.path}, but its folder ${dirname(this.path)} ` +
          `cannot be created (${(error as NodeJS.ErrnoException).code ?? 'error'}: ${describeMkdirFailure(error)})`,
      );
    }
    createPrivately(this.path);
    const db = new BetterSqlite3(this.path);
    db.pragma('journal_mode = WAL');
    // FULL: a commit is on disk before the 200 leaves, so neither kill -9 nor power loss loses it.
    db.pragma('synchronous = FULL');
    db.pragma(`busy_timeout = ${MIGRATION_BUSY_TIMEOUT_MS}`);
    db.defaultSafeIntegers(true);
    migrate(db, this.migrations);
    db.pragma('busy_timeout = 0');
    this.db = db;
  }

  /** Closed last, after the HTTP server and every feature have stopped using it. */
  onApplicationShutdown(): void {
    this.relaxed?.close();
    this.relaxed = undefined;
    this.db?.close();
    this.db = undefined;
  }

  /**
   * Migrated, and writable: the write lock can be taken (and is given back at once). Another
   * process holding it, a read-only file or folder: not ready.
   */
  async ping(): Promise<void> {
    let newest: unknown;
    try {
      const db = this.connection;
      newest = db.prepare('SELECT max(version) FROM schema_migrations').pluck().get();
      db.exec('BEGIN IMMEDIATE');
      db.exec('ROLLBACK');
    } catch (error) {
      throw sqliteFailure('SQLite store is not usable', error);
    }
    const latest = this.migrations[this.migrations.length - 1]?.version ?? 0;
    if (Number(newest ?? 0) < latest) throw new StorageError('SQLite store is not migrated', { cause: newest });
  }
}

/**
 * Creates an empty file at `path` with mode 0600 (whatever the umask), unless one is there. When it
 * cannot (a read-only folder…), opening the file reports why, as it did before.
 */
function createPrivately(path: string): void {
  let fd: number;
  try {
    fd = openSync(path, 'wx', 0o600);
  } catch {
    return;
  }
  try {
    fchmodSync(fd, 0o600);
  } finally {
    closeSync(fd);
  }
}

function describeMkdirFailure(error: unknown): string {
  switch ((error as NodeJS.ErrnoException).code) {
    case 'EEXIST':
    case 'ENOTDIR':
      return 'a part of that path is a file, not a folder';
    case 'EACCES':
    case 'EPERM':
      return 'no permission to create it';
    case 'EROFS':
      return 'the file system is read-only';
    default:
      return (error as Error).message;
  }
}

/** Applies the missing migrations in one write transaction, so concurrent starters serialise. */
function migrate(db: BetterSqlite3.Database, migrations: readonly Migration[]): void {
  db.exec(`CREATE TABLE IF NOT EXISTS schema_migrations (
             version    INTEGER PRIMARY KEY,
             name       TEXT NOT NULL,
             applied_at TEXT NOT NULL
           ) STRICT`);
  const latest = migrations[migrations.length - 1]?.version ?? 0;
  db.transaction(() => {
    const applied = new Set(
      db
        .prepare('SELECT version FROM schema_migrations')
        .pluck()
        .all()
        .map((version) => Number(version)),
    );
    const newest = Math.max(0, ...applied);
    if (newest > latest) throw newerSchemaError('SQLite', newest, latest);
    const record = db.prepare('INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)');
    for (const migration of migrations) {
      if (applied.has(migration.version)) continue;
      db.exec(migration.sqlite);
      record.run(migration.version, migration.name, new Date().toISOString());
    }
  }).immediate();
}

/** Runs `work` (synchronous SQLite), again after a pause off the event loop while the file is busy. */
export async function retryWhileBusy<T>(work: () => T): Promise<T> {
  for (let waited = 0; ; waited += BUSY_RETRY_MS) {
    try {
      return work();
    } catch (error) {
      if (!isBusy(error) || waited >= BUSY_WAIT_MS) throw error;
    }
    await sleep(BUSY_RETRY_MS);
  }
}
