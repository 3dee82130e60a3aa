import { setTimeout as sleep } from 'node:timers/promises';
import { Logger, OnApplicationShutdown, OnModuleInit } from '@nestjs/common';
import { Pool, PoolClient, QueryConfig, QueryResultRow } from 'pg';
import { CompiledQuery, Kysely, PostgresDialect, sql } from 'kysely';
import { Database } from './database';
import { driverError, isDriverError } from './driver-errors';
import { inNameOrder, Migration } from './migration';
import { appliedMigrationsQuery, checkMigrated, migrate, MigrationStore } from './migrator';
import { isQueryTimeout, isUnavailable } from './postgres-errors';
import { NamedQuery, STATEMENT_NAME } from './prepared-query';
import { FusedRow, fuseStatements, isGuardFailure } from './postgres-one-statement';
import { StorageTimeoutError } from './storage-timeout.error';
import { StorageUnavailableError } from './storage-unavailable.error';
import { StorageError } from './storage.error';
import { Tables } from './tables';
import { runAfterCommit, StatementResult, Transaction, TransactionOptions } from './transaction';

export interface PostgresOptions {
  url: string;
  poolMax: number;
  connectAttempts: number;
  /** How long a statement waits for the server's answer before it fails with StorageTimeoutError. */
  queryTimeoutMs: number;
  /** Whether fixed-text statements run as named prepared statements (DATABASE_PREPARED_STATEMENTS; default true). */
  preparedStatements?: boolean;
}

const MAX_BACKOFF_MS = 5000;
// pg's own wait for an answer runs this much longer than the server's statement_timeout, so the
// server cancels a slow statement itself (and frees its locks) before the client gives up on it.
const CLIENT_TIMEOUT_MARGIN_MS = 500;
const COMMIT = CompiledQuery.raw('COMMIT');

/**
 * PostgreSQL through one pool per instance, shared by every feature. Statements whose text is fixed by
 * construction (`prepareQuery`, `fixedText`) run as named prepared statements, parsed and planned once
 * per connection; with `preparedStatements` off, for a pooler that cannot keep them (PgBouncer in
 * transaction mode before 1.24 without `max_prepared_statements`), all are unnamed. A named statement
 * lists its columns (never `SELECT *`), so a column added during a rolling deploy leaves the plans
 * cached on the old instances' connections valid.
 *
 * Nothing waits past `queryTimeoutMs`: every connection carries it as `statement_timeout`,
 * `lock_timeout` and `idle_in_transaction_session_timeout`, so the server cancels a statement that runs
 * or waits on a lock too long (a migration's or an operator's `LOCK TABLE`, say); pg's `query_timeout`,
 * a little longer, covers a server that does not answer; a pool slot is awaited no longer either. A
 * connection whose statement timed out is destroyed, never rolled back in place (the ROLLBACK would
 * queue behind what held it).
 */
export class PostgresDatabase extends Database implements OnModuleInit, OnApplicationShutdown {
  readonly kind = 'postgres';
  private readonly logger = new Logger(PostgresDatabase.name);
  readonly pool: Pool;
  readonly migrations: Migration[];
  readonly kysely: Kysely<Tables>;

  constructor(
    readonly options: PostgresOptions,
    migrations: readonly Migration[],
  ) {
    super();
    this.migrations = inNameOrder(migrations);
    this.pool = new Pool({
      // Settings in the URL (application_name, options, ssl…) win over these defaults.
      application_name: 'plant-store',
      connectionString: options.url,
      max: options.poolMax,
      connectionTimeoutMillis: Math.min(5000, options.queryTimeoutMs),
      idleTimeoutMillis: 30000,
      statement_timeout: options.queryTimeoutMs,
      lock_timeout: options.queryTimeoutMs,
      idle_in_transaction_session_timeout: options.queryTimeoutMs,
    });
    // An idle connection that dies (server restart, pg_terminate_backend) is dropped by the pool;
    // without a listener its error event would end the process.
    this.pool.on('error', (error) => this.logger.warn(`Dropped a broken PostgreSQL connection: ${error.message}`));
    this.kysely = new Kysely<Tables>({ dialect: new PostgresDialect({ pool: this.pool }) });
  }

  /** host:port/database, without user, password or parameters. */
  get location(): string {
    try {
      const { hostname, port, pathname } = new URL(this.options.url);
      const database = decodeURIComponent(pathname.slice(1)) || '(default database)';
      return `${hostname || 'localhost'}:${port || '5432'}/${database}`;
    } catch {
      return '(unparsable URL)';
    }
  }

  /** Applies the migrations, retrying with backoff while the server is unreachable. */
  async onModuleInit(): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      try {
        await this.migrate();
        return;
      } catch (error) {
        if (!isUnavailable(error)) throw error;
        if (attempt >= this.options.connectAttempts) {
          throw new StorageUnavailableError(
            `PostgreSQL at ${this.location} is unreachable after ${attempt} attempt(s): ${(error as Error).message}; ` +
              'check DATABASE_URL (and DATABASE_CONNECT_ATTEMPTS to wait longer)',
            { cause: error },
          );
        }
        const delay = Math.min(200 * 2 ** (attempt - 1), MAX_BACKOFF_MS);
        this.logger.warn(
          `PostgreSQL at ${this.location} is unreachable (attempt ${attempt} of ${this.options.connectAttempts}): ` +
            `${(error as Error).message}; retrying in ${delay} ms`,
        );
        await sleep(delay);
      }
    }
  }

  async onApplicationShutdown(): Promise<void> {
    await this.pool.end();
  }

  async ping(): Promise<void> {
    const { rows } = await this.execute('answer the readiness check', appliedMigrationsQuery(this.kysely));
    checkMigrated('PostgreSQL', rows, this.migrations);
  }

  async execute<Row>(action: string, query: CompiledQuery<Row>): Promise<StatementResult<Row>> {
    try {
      return await this.run(this.pool, query);
    } catch (error) {
      throw this.translate(error, action);
    }
  }

  /**
   * Sends the BEGIN with `options` in one round trip (constant statements, no parameters: the simple
   * protocol), then `work`, then COMMIT, on one connection. On failure the connection is destroyed,
   * not rolled back and lent out again: it may be mid-statement, broken, or queued behind a lock, and
   * closing it ends the transaction on the server at once.
   */
  async transaction<T>(
    action: string,
    work: (tx: Transaction) => T | Promise<T>,
    { durability = 'full', locks = [], holdWritesTo = [] }: TransactionOptions = {},
  ): Promise<T> {
    const begin = [
      'BEGIN',
      ...(durability === 'relaxed' ? ['SET LOCAL synchronous_commit TO off'] : []),
      ...locks.map((name) => `SELECT pg_advisory_xact_lock(hashtext(${literal(name)}))`),
      ...holdWritesTo.map((table) => `LOCK TABLE ${identifier(table)} IN SHARE MODE`),
    ];
    const client = await this.pool.connect().catch((error: unknown) => {
      throw this.translate(error, action);
    });
    let failure: Error | undefined;
    // A connection that breaks while checked out emits 'error' (the pool listens only to idle ones);
    // unheard, that would end the process. The statement in flight fails with it anyway.
    const onError = (error: Error) => (failure ??= error);
    client.on('error', onError);
    // What the driver threw (here or through `tx`) is translated; what `work` threw itself passes. A
    // failed statement aborts the transaction on the server: work that caught it and carried on is
    // rejected with it rather than resolved over a COMMIT that rolled back.
    let statementFailure: unknown;
    const execute = <Row>(query: CompiledQuery<Row>) =>
      this.run(client, query).catch((error: unknown) => {
        throw (statementFailure ??= driverError(error));
      });
    const committed: (() => void)[] = [];
    const afterCommit = (callback: () => void) => void committed.push(callback);
    try {
      await execute(CompiledQuery.raw(begin.join('; ')));
      const result = await work({ execute, afterCommit });
      if (statementFailure !== undefined) throw statementFailure as Error; // a driver error, translated below
      await execute(COMMIT);
      runAfterCommit(committed, this.logger);
      return result;
    } catch (error) {
      failure = error as Error;
      throw isDriverError(error) ? this.translate(error, action) : error;
    } finally {
      client.off('error', onError);
      client.release(failure);
    }
  }

  /**
   * `write` and what `publish` writes with `tx` as ONE autocommitted statement, for a write that must
   * store `expectedRows` rows (`INSERT … ON CONFLICT DO NOTHING RETURNING …`) with its events: a round
   * trip where `transaction` takes four (BEGIN, the write, the publish, COMMIT). `publish` gets a
   * transaction that captures its one statement; its `execute` settles once the fused statement has run
   * and its `afterCommit` callbacks run after that (autocommitted). It answers `false`, nothing written,
   * when the write stored fewer rows (a guard in the statement rolls it all back: some row was there
   * already, for the caller to resolve in a transaction) or `publish` runs statements at once; `true`
   * once all is stored. `publish` must write with at most one statement, as the outbox does: the
   * statement is committed when its result comes back, so a second one after that is refused, as an
   * error of the write. The published statement is `[WITH …] SELECT …`; its rows come back through JSON
   * (a bigint as a number, a timestamp as text).
   */
  async writeInOneStatement(
    action: string,
    write: CompiledQuery,
    expectedRows: number,
    publish: (tx: Transaction) => Promise<void>,
  ): Promise<boolean> {
    type Settle = { resolve: (result: StatementResult<never>) => void; reject: (error: unknown) => void };
    let captured: { query: CompiledQuery; settle: Settle } | undefined;
    let refused = false;
    let onCapture = () => {};
    const wasCaptured = new Promise<void>((resolve) => (onCapture = resolve));
    const committed: (() => void)[] = [];
    const tx: Transaction = {
      execute: <Row>(query: CompiledQuery<Row>) => {
        if (captured !== undefined) {
          refused = true;
          return Promise.reject(new Error(`${action}: its events take one statement when written with it`));
        }
        return new Promise<StatementResult<Row>>((resolve, reject) => {
          captured = { query, settle: { resolve, reject } };
          onCapture();
        });
      },
      afterCommit: (callback) => void committed.push(callback),
    };
    const published = Promise.resolve().then(() => publish(tx));
    const settled = published.then(
      () => undefined,
      (error: unknown) => ({ error }),
    );
    const publishFailed = await Promise.race([wasCaptured.then(() => undefined), settled]);
    if (publishFailed !== undefined) throw publishFailed.error; // before it wrote anything
    const abandon = async (why: unknown) => {
      captured?.settle.reject(why);
      await settled; // publish fails with `why`: handled here, not left unhandled
    };
    // `refused`: a second statement asked for at once (Promise.all), before the first has run.
    let fused: CompiledQuery<FusedRow> | undefined;
    try {
      fused = refused ? undefined : fuseStatements(write, expectedRows, captured?.query);
    } catch (error) {
      await abandon(error);
      throw error;
    }
    if (fused === undefined) {
      await abandon(new Error(`${action}: its events are not one statement`));
      return false;
    }
    let rows: FusedRow[];
    try {
      rows = await this.runKeepingOnGuard(fused);
    } catch (error) {
      await abandon(error);
      if (isGuardFailure(error)) return false;
      throw this.translate(error, action);
    }
    const result = rows[0].published ?? [];
    captured?.settle.resolve({ rows: result as never[], affectedRows: result.length });
    const outcome = await settled;
    runAfterCommit(committed, this.logger);
    if (outcome !== undefined) throw outcome.error; // committed, but publish failed after its statement
    return true;
  }

  /**
   * `query` on a connection of the pool, given back for reuse when it fails on its guard (the server
   * rolled the statement back, the connection is sound; `pool.query` would close it, and each replay
   * would then open a new one), destroyed on any other failure.
   */
  private async runKeepingOnGuard<Row>(query: CompiledQuery<Row>): Promise<Row[]> {
    const client = await this.pool.connect();
    let failure: Error | undefined;
    // A connection that breaks while checked out emits 'error' (see `transaction`).
    const onError = (error: Error) => (failure ??= error);
    client.on('error', onError);
    try {
      return (await this.run(client, query)).rows;
    } catch (error) {
      if (!isGuardFailure(error)) failure ??= error as Error;
      throw error;
    } finally {
      client.off('error', onError);
      client.release(failure);
    }
  }

  /** A statement on the pool or a transaction's client; pg fails it with "Query read timeout" past `query_timeout`. */
  private async run<Row>(on: Pool | PoolClient, query: CompiledQuery<Row>): Promise<StatementResult<Row>> {
    // pg reads `query_timeout` per query; @types/pg's QueryConfig does not declare it.
    const config: QueryConfig & { query_timeout: number } = {
      text: query.sql,
      values: [...query.parameters],
      query_timeout: this.options.queryTimeoutMs + CLIENT_TIMEOUT_MARGIN_MS,
    };
    const name = this.options.preparedStatements === false ? undefined : (query as NamedQuery<Row>)[STATEMENT_NAME];
    if (name !== undefined) config.name = name;
    const { rows, rowCount } = await on.query<Row & QueryResultRow>(config);
    return { rows, affectedRows: rowCount ?? 0 };
  }

  /** A driver error as the port's: timed out, unreachable, or a plain failure to `action`. */
  private translate(error: unknown, action: string): Error {
    if (error instanceof StorageError || error instanceof StorageUnavailableError) return error;
    if (isQueryTimeout(error)) {
      return new StorageTimeoutError(`PostgreSQL did not answer within ${this.options.queryTimeoutMs} ms`, {
        cause: error,
      });
    }
    if (isUnavailable(error)) return new StorageUnavailableError('PostgreSQL is unavailable', { cause: error });
    return new StorageError(`PostgreSQL failed to ${action}`, { cause: error });
  }

  // On a connection of its own, without the timeouts that bound every request (see `migrate`).
  private async migrate(): Promise<void> {
    const pool = new Pool({
      application_name: 'plant-store',
      connectionString: this.options.url,
      max: 1,
      connectionTimeoutMillis: Math.min(5000, this.options.queryTimeoutMs),
    });
    pool.on('error', () => undefined); // the migration's statement fails with it, and that is reported
    const migrator = new Kysely<unknown>({ dialect: new PostgresDialect({ pool }) });
    try {
      await migrate(migrator, POSTGRES_MIGRATIONS, this.migrations);
    } finally {
      await migrator.destroy(); // ends `pool`
    }
  }
}

/** PostgreSQL's part of the migration: DDL as it is (several statements in one simple query). */
const POSTGRES_MIGRATIONS: MigrationStore = {
  name: 'PostgreSQL',
  apply: async (transaction, migration) => void (await sql.raw(migration.postgres).execute(transaction)),
  // The advisory lock the builds before named migrations took too.
  legacyLock: sql`SELECT pg_advisory_xact_lock(hashtext('plant-store:schema-migrations'))`,
  findLegacyTable: sql`SELECT 1 WHERE to_regclass('schema_migrations') IS NOT NULL`,
};

// Constants of our own code (lock and table names) as an SQL string literal and identifier.
const literal = (text: string) => `'${text.replace(/'/g, "''")}'`;
const identifier = (name: string) => `"${name.replace(/"/g, '""')}"`;
