import { closeSync, fchmodSync, mkdirSync, openSync } from 'node:fs';
import { dirname } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Logger, OnApplicationShutdown, OnModuleInit } from '@nestjs/common';
import { SpanKind } from '@opentelemetry/api';
import BetterSqlite3 from 'better-sqlite3';
import { CompiledQuery, Kysely, sql } from 'kysely';
import { ConfigError } from '../config/config.error';
import { inSpan, sampledSpanActive } from '../tracing/trace-context';
import { Database } from './database';
import { driverError, isDriverError } from './driver-errors';
import { migrationSqliteDialect, sharedSqliteDialect, SqliteRowLocksPlugin } from './kysely-sqlite';
import { inNameOrder, Migration } from './migration';
import { appliedMigrationsQuery, checkMigrated, migrate, MigrationStore } from './migrator';
import { isBusy, sqliteFailure } from './sqlite-errors';
import { Tables } from './tables';
import { runAfterCommit, StatementResult, Transaction, TransactionOptions } from './transaction';

/**
 * How long a transaction waits for another process's write lock (an overlapping deploy, an operator's
 * `sqlite3` shell) before a 503, trying again off the event loop every BUSY_RETRY_MS. The connections
 * keep busy_timeout 0: SQLite's own wait would block the event loop.
 */
export const BUSY_WAIT_MS = 250;
const BUSY_RETRY_MS = 25;
const MIGRATION_BUSY_TIMEOUT_MS = 5000;

const OPERATIONS: Record<string, string> = {
  SelectQueryNode: 'SELECT',
  InsertQueryNode: 'INSERT',
  UpdateQueryNode: 'UPDATE',
  DeleteQueryNode: 'DELETE',
};

/** The embedded store: one SQLite file in WAL mode, fsync on every commit, 64-bit integers as bigint. */
export class SqliteDatabase extends Database implements OnModuleInit, OnApplicationShutdown {
  readonly kind = 'sqlite';
  private readonly logger = new Logger(SqliteDatabase.name);
  readonly migrations: Migration[];
  readonly kysely: Kysely<Tables>;
  private db?: BetterSqlite3.Database;
  private relaxed?: BetterSqlite3.Database;
  // The turn: this process's connections never wait on each other's locks. While a transaction (or a
  // statement queued behind one) holds it, the other statements and transactions wait in `turns`.
  private taken = false;
  private readonly turns: (() => void)[] = [];

  constructor(
    private readonly path: string,
    migrations: readonly Migration[],
  ) {
    super();
    this.migrations = inNameOrder(migrations);
    this.kysely = new Kysely<Tables>({
      dialect: sharedSqliteDialect(() => this.connection),
      plugins: [new SqliteRowLocksPlugin()],
    });
  }

  get location(): string {
    return `file ${this.path}`;
  }

  /** The durable connection: every commit is fsynced. */
  get connection(): BetterSqlite3.Database {
    if (!this.db) throw new Error('SQLite store is not open');
    return this.db;
  }

  // `durability: 'relaxed'`: synchronous=NORMAL, so its commits do not stall the event loop for an
  // fsync each; the next FULL commit on `connection` flushes them too, as both write the same WAL.
  private get relaxedConnection(): BetterSqlite3.Database {
    if (!this.db) throw new Error('SQLite store is not open');
    if (!this.relaxed) {
      this.relaxed = new BetterSqlite3(this.path);
      this.relaxed.pragma('synchronous = NORMAL');
      this.relaxed.pragma('busy_timeout = 0');
      this.relaxed.defaultSafeIntegers(true);
    }
    return this.relaxed;
  }

  async onModuleInit(): Promise<void> {
    try {
      // Private to the service's user: a folder made here 0700, the file 0600 (its -wal and -shm take
      // the file's mode). Existing ones keep their modes.
      mkdirSync(dirname(this.path), { recursive: true, mode: 0o700 });
    } catch (error) {
      const { code, message } = error as NodeJS.ErrnoException;
      throw new ConfigError(
        `Invalid configuration: DATABASE_URL points at ${this.path}, but its folder ${dirname(this.path)} ` +
          `cannot be created (${code ?? 'error'}: ${MKDIR_FAILURES[code ?? ''] ?? message})`,
      );
    }
    createPrivately(this.path);
    const db = new BetterSqlite3(this.path);
    try {
      db.pragma(`busy_timeout = ${MIGRATION_BUSY_TIMEOUT_MS}`);
      db.pragma('journal_mode = WAL');
      // FULL: a commit is on disk before the 200 leaves, so neither kill -9 nor power loss loses it.
      db.pragma('synchronous = FULL');
      db.defaultSafeIntegers(true);
      await oneAtATime(this.path, () => this.migrate());
      db.pragma('busy_timeout = 0');
    } catch (error) {
      db.close();
      throw error;
    }
    this.db = db;
  }

  // On a connection of the migrator's own, closed before the store opens: Kysely's driver and the
  // features' synchronous statements never share a connection while a migration runs.
  private async migrate(): Promise<void> {
    const connection = new BetterSqlite3(this.path);
    connection.pragma(`busy_timeout = ${MIGRATION_BUSY_TIMEOUT_MS}`);
    connection.pragma('synchronous = FULL');
    const migrator = new Kysely<unknown>({ dialect: migrationSqliteDialect(connection) });
    try {
      await migrate(migrator, sqliteMigrations(connection), this.migrations);
    } finally {
      await migrator.destroy(); // closes `connection`
    }
  }

  onApplicationShutdown(): void {
    this.relaxed?.close();
    this.relaxed = undefined;
    this.db?.close();
    this.db = undefined;
  }

  /** Migrated, and writable: the write lock can be taken (and is given back at once). */
  async ping(): Promise<void> {
    let applied: { name: string }[];
    await this.take();
    try {
      applied = runCompiled(this.connection, appliedMigrationsQuery(this.kysely)).rows;
      this.connection.exec('BEGIN IMMEDIATE');
      this.connection.exec('ROLLBACK');
    } catch (error) {
      throw sqliteFailure('SQLite store is not usable', error);
    } finally {
      this.give();
    }
    checkMigrated('SQLite store', applied, this.migrations);
  }

  /** Runs the statement at once, unless a transaction has the turn; traced, in a span of its own. */
  async execute<Row>(action: string, query: CompiledQuery<Row>): Promise<StatementResult<Row>> {
    if (!this.taken) return this.statement(action, query);
    await this.take();
    try {
      return this.statement(action, query);
    } finally {
      this.give();
    }
  }

  // SQLite has no instrumentation of its own: the span says what the store did. Untraced (tracing off,
  // or the request not sampled), a statement builds no span name, options or closure.
  private statement<Row>(
    action: string,
    query: CompiledQuery<Row>,
    traced = sampledSpanActive(),
  ): StatementResult<Row> {
    if (traced) {
      const attributes = { 'db.system': 'sqlite', 'db.operation': OPERATIONS[query.query.kind] ?? 'statement' };
      const options = { kind: SpanKind.CLIENT, attributes };
      return inSpan(`sqlite ${action}`, options, undefined, () => this.statement(action, query, false));
    }
    try {
      return runCompiled(this.connection, query);
    } catch (error) {
      throw failedTo(action, error);
    }
  }

  /**
   * With the turn and the file free, BEGIN and `work` run at once, in the caller's tick, and COMMIT
   * right after (in the same tick for a plain value, in a microtask once a promise settles): work that
   * awaits no I/O holds the event loop from BEGIN to COMMIT, fsync included, and no other statement
   * comes between. Otherwise it waits for the turn (and a busy file, in `begin`). Work that returns a
   * promise keeps the turn until it settles.
   */
  transaction<T>(
    action: string,
    work: (tx: Transaction) => T | Promise<T>,
    options: TransactionOptions = {},
  ): Promise<T> {
    let connection: BetterSqlite3.Database;
    try {
      connection = options.durability === 'relaxed' ? this.relaxedConnection : this.connection;
    } catch (error) {
      return Promise.reject(failedTo(action, error)); // closed, or not opened
    }
    if (!this.taken) {
      this.taken = true;
      try {
        connection.exec('BEGIN IMMEDIATE');
        return this.inTransaction(connection, action, work);
      } catch (error) {
        this.give();
        if (!isBusy(error)) return Promise.reject(failedTo(action, error));
      }
    }
    return this.begin(connection, action).then(() => this.inTransaction(connection, action, work));
  }

  /** `work` in the open transaction, then COMMIT (ROLLBACK on failure), then the turn given back. */
  private inTransaction<T>(
    connection: BetterSqlite3.Database,
    action: string,
    work: (tx: Transaction) => T | Promise<T>,
  ): Promise<T> {
    // A statement that failed fails the transaction, as on PostgreSQL (which aborts it there): work that
    // caught the error and carried on is rolled back and rejected with it, never half committed.
    let statementFailure: unknown;
    const committed: (() => void)[] = [];
    const commit = (result: T): T => {
      if (statementFailure !== undefined) throw statementFailure as Error; // a driver error, translated below
      try {
        connection.exec('COMMIT');
      } catch (error) {
        throw driverError(error);
      }
      this.give();
      runAfterCommit(committed, this.logger);
      return result;
    };
    // A statement's error becomes the port's; what the work threw passes as it is.
    const failed = (error: unknown): Error => {
      rollBack(connection);
      this.give();
      return isDriverError(error) ? failedTo(action, error) : (error as Error);
    };
    const tx: Transaction = {
      execute: (query) => {
        try {
          return runCompiled(connection, query);
        } catch (error) {
          throw (statementFailure ??= driverError(error));
        }
      },
      afterCommit: (callback) => void committed.push(callback),
    };
    try {
      const done = work(tx);
      if (!isPromiseLike(done)) return Promise.resolve(commit(done));
      return done.then(commit).catch((error: unknown) => {
        throw failed(error);
      });
    } catch (error) {
      return Promise.reject(failed(error));
    }
  }

  /**
   * Takes the turn, then BEGIN IMMEDIATE; while another process holds the file, gives the turn back
   * between tries (this process's statements go on meanwhile). Resolves holding the turn, in the transaction.
   */
  private async begin(connection: BetterSqlite3.Database, action: string): Promise<void> {
    for (let waited = 0; ; waited += BUSY_RETRY_MS) {
      await this.take();
      try {
        connection.exec('BEGIN IMMEDIATE');
        return;
      } catch (error) {
        this.give();
        if (!isBusy(error) || waited >= BUSY_WAIT_MS) throw failedTo(action, error);
      }
      await sleep(BUSY_RETRY_MS);
    }
  }

  /** Resolves holding the turn: at once if it is free, else when those before this one have ended. */
  private async take(): Promise<void> {
    if (this.taken) await new Promise<void>((resolve) => this.turns.push(resolve));
    else this.taken = true;
  }

  private give(): void {
    const next = this.turns.shift();
    if (next === undefined) this.taken = false;
    else next();
  }
}

const failedTo = (action: string, error: unknown): Error => sqliteFailure(`SQLite failed to ${action}`, error);

function isPromiseLike<T>(value: T | Promise<T>): value is Promise<T> {
  return typeof (value as { then?: unknown } | null)?.then === 'function';
}

/** Ends a failed transaction, if SQLite has not already; the failure that led here is the one reported. */
function rollBack(connection: BetterSqlite3.Database): void {
  try {
    if (connection.inTransaction) connection.exec('ROLLBACK');
  } catch {
    // The connection's next BEGIN reports what is still wrong.
  }
}

/** Creates the file with mode 0600 whatever the umask, unless it exists; if it cannot, opening it says why. */
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

const MKDIR_FAILURES: Partial<Record<string, string>> = {
  EEXIST: 'a part of that path is a file, not a folder',
  ENOTDIR: 'a part of that path is a file, not a folder',
  EACCES: 'no permission to create it',
  EPERM: 'no permission to create it',
  EROFS: 'the file system is read-only',
};

/**
 * SQLite's part of the migration, on the migrator's `connection`, inside the transaction Kysely opened
 * there: its BEGIN IMMEDIATE is the lock. A step runs with `exec`, as better-sqlite3's `prepare` (which
 * Kysely's driver uses) takes one statement at a time.
 */
const sqliteMigrations = (connection: BetterSqlite3.Database): MigrationStore => ({
  name: 'SQLite',
  apply: async (_transaction, migration) => void connection.exec(migration.sqlite),
  findLegacyTable: sql`SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'`,
});

/**
 * Runs one file's migrations in this process one at a time. Across processes BEGIN IMMEDIATE and
 * busy_timeout make them take turns; within one, a start waiting synchronously on the busy timeout
 * would block the event loop the start holding the lock needs (tests open several databases on one file).
 */
const migrationsInFlight = new Map<string, Promise<void>>();
async function oneAtATime(path: string, work: () => Promise<void>): Promise<void> {
  const mine = (migrationsInFlight.get(path) ?? Promise.resolve()).catch(() => undefined).then(work);
  migrationsInFlight.set(path, mine);
  try {
    await mine;
  } finally {
    if (migrationsInFlight.get(path) === mine) migrationsInFlight.delete(path);
  }
}

// One prepared statement per SQL text and connection.
const statements = new WeakMap<BetterSqlite3.Database, Map<string, BetterSqlite3.Statement>>();

function runCompiled<Row>(connection: BetterSqlite3.Database, query: CompiledQuery<Row>): StatementResult<Row> {
  let cache = statements.get(connection);
  if (cache === undefined) statements.set(connection, (cache = new Map<string, BetterSqlite3.Statement>()));
  let statement = cache.get(query.sql);
  if (statement === undefined) cache.set(query.sql, (statement = connection.prepare(query.sql)));
  if (statement.reader) return { rows: statement.all(...query.parameters) as Row[], affectedRows: 0 };
  return { rows: [], affectedRows: statement.run(...query.parameters).changes };
}
