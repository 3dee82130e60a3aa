import { closeSync, fchmodSync, mkdirSync, openSync } from 'node:fs';
import { dirname } from 'node:path';
import { OnApplicationShutdown, OnModuleInit } from '@nestjs/common';
import BetterSqlite3 from 'better-sqlite3';
import { setTimeout as sleep } from 'node:timers/promises';
import { ConfigError } from '../config/config.error';
import { SpanKind } from '@opentelemetry/api';
import { CompiledQuery, Kysely, sql } from 'kysely';
import { inSpan, sampledSpanActive } from '../platform/trace-context';
import { Database } from './database';
import { migrationSqliteDialect, sharedSqliteDialect, SqliteRowLocksPlugin } from './kysely-sqlite';
import { inNameOrder, Migration } from './migration';
import { appliedMigrationsQuery, checkMigrated, migrate, MigrationStore } from './migrator';
import { isBusy, sqliteFailure } from './sqlite-errors';
import { Tables } from './tables';
import { driverError, isDriverError } from './driver-errors';
import { StatementResult, Transaction, TransactionOptions } from './transaction';

/**
 * A write that finds another connection's write lock (an overlapping deploy, an operator's `sqlite3`
 * shell) fails at once with SQLITE_BUSY (busy_timeout 0: SQLite's own wait would hold the event loop),
 * and `begin` tries it again off the loop, every BUSY_RETRY_MS, for up to BUSY_WAIT_MS; then it is a
 * 503. Connections of this process never wait on each other: a transaction that spans turns holds
 * back this process's other statements and transactions until it ends (`SqliteDatabase`).
 */
export const BUSY_WAIT_MS = 250;
const BUSY_RETRY_MS = 25;
const MIGRATION_BUSY_TIMEOUT_MS = 5000;

/** A write transaction open on an SQLite connection: each statement runs at once. */
class SqliteTransaction extends Transaction {
  constructor(readonly connection: BetterSqlite3.Database) {
    super();
  }

  execute<Row>(query: CompiledQuery<Row>): StatementResult<Row> {
    try {
      return runCompiled(this.connection, query);
    } catch (error) {
      throw driverError(error);
    }
  }
}

const OPERATIONS: Record<string, string> = {
  SelectQueryNode: 'SELECT',
  InsertQueryNode: 'INSERT',
  UpdateQueryNode: 'UPDATE',
  DeleteQueryNode: 'DELETE',
};

/** The embedded store: one SQLite file in WAL mode, fsync on every commit, 64-bit integers as bigint. */
export class SqliteDatabase extends Database implements OnModuleInit, OnApplicationShutdown {
  readonly kind = 'sqlite';
  get location(): string {
    return `file ${this.path}`;
  }
  private db?: BetterSqlite3.Database;
  private relaxed?: BetterSqlite3.Database;
  readonly migrations: Migration[];
  readonly kysely: Kysely<Tables>;
  /** Whether a `transaction` (or a statement waiting behind one) has the connections; the others wait in `turns`. */
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

  /**
   * Opens the file (creating its folder) and brings the schema up to date, on a connection of the
   * migrator's own that is closed before the store opens: Kysely's driver and the synchronous
   * statements of the features never share a connection while a migration runs.
   */
  async onModuleInit(): Promise<void> {
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
    try {
      db.pragma(`busy_timeout = ${MIGRATION_BUSY_TIMEOUT_MS}`);
      db.pragma('journal_mode = WAL');
      // FULL: a commit is on disk before the 200 leaves, so neither kill -9 nor power loss loses it.
      db.pragma('synchronous = FULL');
      db.defaultSafeIntegers(true);
      await inTurn(this.path, () => this.migrate());
      db.pragma('busy_timeout = 0');
    } catch (error) {
      db.close();
      throw error;
    }
    this.db = db;
  }

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
    let applied: { name: string }[];
    if (this.taken) await this.take();
    else this.taken = true;
    try {
      const db = this.connection;
      applied = runCompiled(db, appliedMigrationsQuery(this.kysely)).rows;
      db.exec('BEGIN IMMEDIATE');
      db.exec('ROLLBACK');
    } catch (error) {
      throw sqliteFailure('SQLite store is not usable', error);
    } finally {
      this.give();
    }
    checkMigrated('SQLite store', applied, this.migrations);
  }

  /**
   * One statement on the durable connection, at once (synchronously, then resolved); with tracing on,
   * in a span of its own (SQLite has no instrumentation of its own: the span says what the store did).
   */
  execute<Row>(action: string, query: CompiledQuery<Row>): Promise<StatementResult<Row>> {
    if (this.taken) return this.executeInTurn(action, query);
    if (sampledSpanActive()) return this.executeInSpan(action, query);
    // Untraced (tracing off, or this request not sampled), a read builds no span name, options or
    // closure: the statement runs now, and one settled promise is all it needs.
    try {
      return Promise.resolve(runCompiled(this.connection, query));
    } catch (error) {
      return Promise.reject(sqliteFailure(`SQLite failed to ${action}`, error));
    }
  }

  /** A statement that came while a transaction was open: it runs once that one has ended. */
  private async executeInTurn<Row>(action: string, query: CompiledQuery<Row>): Promise<StatementResult<Row>> {
    await this.take();
    try {
      return await (sampledSpanActive() ? this.executeInSpan(action, query) : this.executeNow(action, query));
    } finally {
      this.give();
    }
  }

  private async executeNow<Row>(action: string, query: CompiledQuery<Row>): Promise<StatementResult<Row>> {
    try {
      return runCompiled(this.connection, query);
    } catch (error) {
      throw sqliteFailure(`SQLite failed to ${action}`, error);
    }
  }

  private async executeInSpan<Row>(action: string, query: CompiledQuery<Row>): Promise<StatementResult<Row>> {
    const operation = OPERATIONS[query.query.kind] ?? 'statement';
    return inSpan(
      `sqlite ${action}`,
      { kind: SpanKind.CLIENT, attributes: { 'db.system': 'sqlite', 'db.operation': operation } },
      undefined,
      () => {
        try {
          return runCompiled(this.connection, query);
        } catch (error) {
          throw sqliteFailure(`SQLite failed to ${action}`, error);
        }
      },
    );
  }

  /**
   * When no transaction of this process is open and the file is free, BEGIN, `work` and (if it
   * returns a plain value) COMMIT run at once, in the caller's tick: a group commit that times how
   * long its commit held the event loop (`TurnBatcher`'s `untilQuiet`) sees all of it, fsync included.
   * Otherwise the transaction waits for its turn (and for a busy file, `begin`). Work that returns a
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
      return Promise.reject(sqliteFailure(`SQLite failed to ${action}`, error)); // closed, or not opened
    }
    if (!this.taken) {
      this.taken = true;
      try {
        connection.exec('BEGIN IMMEDIATE');
        return this.inTransaction(connection, action, work);
      } catch (error) {
        this.give();
        if (!isBusy(error)) return Promise.reject(sqliteFailure(`SQLite failed to ${action}`, error));
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
    const commit = (result: T): T => {
      try {
        connection.exec('COMMIT');
      } catch (error) {
        throw driverError(error);
      }
      this.give();
      return result;
    };
    // A statement's error becomes the port's; what the work threw passes as it is.
    const failed = (error: unknown): Error => {
      rollBack(connection);
      this.give();
      return isDriverError(error) ? sqliteFailure(`SQLite failed to ${action}`, error) : (error as Error);
    };
    try {
      const done = work(new SqliteTransaction(connection));
      if (!isPromiseLike(done)) return Promise.resolve(commit(done));
      return done.then(commit).catch((error: unknown) => {
        throw failed(error);
      });
    } catch (error) {
      return Promise.reject(failed(error));
    }
  }

  /**
   * Takes the turn, then BEGIN IMMEDIATE. While another process holds the file, the turn is given back
   * between tries (this process's statements go on meanwhile), every BUSY_RETRY_MS for up to
   * BUSY_WAIT_MS; then a 503. Resolves holding the turn, with the transaction open.
   */
  private async begin(connection: BetterSqlite3.Database, action: string): Promise<void> {
    for (let waited = 0; ; waited += BUSY_RETRY_MS) {
      if (this.taken) await this.take();
      else this.taken = true;
      try {
        connection.exec('BEGIN IMMEDIATE');
        return;
      } catch (error) {
        this.give();
        if (!isBusy(error) || waited >= BUSY_WAIT_MS) throw sqliteFailure(`SQLite failed to ${action}`, error);
      }
      await sleep(BUSY_RETRY_MS);
    }
  }

  /** Waits until the statements and transactions before this one have ended; the turn is then this one's. */
  private take(): Promise<void> {
    return new Promise((resolve) => this.turns.push(resolve));
  }

  /** Hands the turn to the next in line, or frees it. */
  private give(): void {
    const next = this.turns.shift();
    if (next === undefined) this.taken = false;
    else next();
  }
}

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

/**
 * SQLite's part of the migration, on the migrator's `connection`: `BEGIN IMMEDIATE` is the lock,
 * and a step's statements run with better-sqlite3's `exec` (its `prepare`, which Kysely's driver
 * uses, takes one statement at a time), inside the transaction Kysely opened on that connection.
 */
const sqliteMigrations = (connection: BetterSqlite3.Database): MigrationStore => ({
  name: 'SQLite',
  apply: async (_transaction, migration) => void connection.exec(migration.sqlite),
  lockLegacy: async () => undefined, // the transaction's BEGIN IMMEDIATE is the lock
  hasLegacyTable: async (transaction) => {
    const { rows } = await sql`SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'`.execute(
      transaction,
    );
    return rows.length > 0;
  },
});

/**
 * Runs the migrations of one file in this process one at a time. Across processes BEGIN IMMEDIATE
 * and busy_timeout make them take turns; within one, a start waiting synchronously on the busy
 * timeout would block the event loop that the start holding the lock needs to finish (tests open
 * several databases on one file at once).
 */
const migrationsInFlight = new Map<string, Promise<void>>();
async function inTurn(path: string, work: () => Promise<void>): Promise<void> {
  const previous = migrationsInFlight.get(path) ?? Promise.resolve();
  const mine = previous.catch(() => undefined).then(work);
  migrationsInFlight.set(path, mine);
  try {
    await mine;
  } finally {
    if (migrationsInFlight.get(path) === mine) migrationsInFlight.delete(path);
  }
}

// One statement per prepared statement, and one statement cache per connection (keyed by the SQL text).
const statements = new WeakMap<BetterSqlite3.Database, Map<string, BetterSqlite3.Statement>>();

/** Runs a compiled query synchronously on `connection`, its statement prepared once per SQL text. */
function runCompiled<Row>(connection: BetterSqlite3.Database, query: CompiledQuery<Row>): StatementResult<Row> {
  let cache = statements.get(connection);
  if (cache === undefined) statements.set(connection, (cache = new Map<string, BetterSqlite3.Statement>()));
  let statement = cache.get(query.sql);
  if (statement === undefined) cache.set(query.sql, (statement = connection.prepare(query.sql)));
  if (statement.reader) return { rows: statement.all(...query.parameters) as Row[], affectedRows: 0 };
  return { rows: [], affectedRows: statement.run(...query.parameters).changes };
}
