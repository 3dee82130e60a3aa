import { setTimeout as sleep } from 'node:timers/promises';
import { Logger, OnApplicationShutdown, OnModuleInit } from '@nestjs/common';
import { Pool, PoolClient, QueryConfig, QueryResult, QueryResultRow } from 'pg';
import { CompiledQuery, Kysely, PostgresDialect, sql } from 'kysely';
import { Database } from './database';
import { inNameOrder, Migration } from './migration';
import { appliedMigrationsQuery, checkMigrated, migrate, MigrationStore, POSTGRES_LEGACY_LOCK } from './migrator';
import { isQueryTimeout, isUnavailable } from './postgres-errors';
import { NamedQuery, STATEMENT_NAME } from './prepared-query';
import { StorageTimeoutError } from './storage-timeout.error';
import { StorageUnavailableError } from './storage-unavailable.error';
import { StorageError } from './storage.error';
import { Tables } from './tables';
import { driverError, isDriverError } from './driver-errors';
import { StatementResult, Transaction, TransactionOptions } from './transaction';

export interface PostgresOptions {
  url: string;
  poolMax: number;
  connectAttempts: number;
  /** How long a statement waits for the server's answer before it fails with StorageTimeoutError. */
  queryTimeoutMs: number;
  /**
   * Whether the statements marked fixed-text (`prepareQuery`, `fixedText`) run as named, server-side
   * prepared statements (DATABASE_PREPARED_STATEMENTS; default true). Off behind a pooler that
   * cannot keep them (PgBouncer in transaction mode before 1.24 without `max_prepared_statements`).
   */
  preparedStatements?: boolean;
}

const MAX_BACKOFF_MS = 5000;

/** A transaction open on one pooled PostgreSQL connection (`run` executes on it). */
class PostgresTransaction extends Transaction {
  constructor(private readonly run: <Row>(query: CompiledQuery<Row>) => Promise<StatementResult<Row>>) {
    super();
  }

  async execute<Row>(query: CompiledQuery<Row>): Promise<StatementResult<Row>> {
    try {
      return await this.run(query);
    } catch (error) {
      throw driverError(error);
    }
  }
}

// pg's own wait for an answer runs this much longer than the server's statement_timeout, so the
// server cancels a slow statement itself (and frees its locks) before the client gives up on it.
const CLIENT_TIMEOUT_MARGIN_MS = 500;

/**
 * PostgreSQL through one pool per instance, shared by every feature. The statements whose text is
 * fixed by construction (compiled once by `prepareQuery`, or marked by `fixedText`: reads by id,
 * pages, deletes, the plants' batch insert, the webhook queue's) run as named prepared statements:
 * pg parses each once per connection, then sends only Bind/Execute, and the server skips the parse
 * and plan of a statement it already holds. Every other statement is unnamed, and so is everything
 * with `preparedStatements` off (DATABASE_PREPARED_STATEMENTS=false), for a pooler that cannot keep
 * them (PgBouncer in transaction mode before 1.24 without `max_prepared_statements`). A named
 * statement lists its columns (never `SELECT *`), so a migration that adds a column during a rolling
 * deploy leaves the plans cached on the old instances' connections valid.
 *
 * Nothing waits past `queryTimeoutMs`: every connection carries it as `statement_timeout`,
 * `lock_timeout` and `idle_in_transaction_session_timeout`, so the server cancels a statement that
 * runs or waits on a lock too long (a migration's or an operator's `LOCK TABLE`, say); pg's
 * `query_timeout`, a little longer, covers a server that does not answer at all; and waiting for a
 * pool slot is bounded by the same time. A connection whose statement timed out is destroyed, never
 * rolled back in place (the ROLLBACK would queue behind what held it).
 */
export class PostgresDatabase extends Database implements OnModuleInit, OnApplicationShutdown {
  readonly kind = 'postgres';
  get location(): string {
    return locationOf(this.options.url);
  }
  private readonly logger = new Logger(PostgresDatabase.name);
  readonly pool: Pool;
  readonly migrations: Migration[];
  readonly kysely: Kysely<Tables>;
  /** Whether fixed-text statements run as named prepared statements (see the class). */
  readonly prepared: boolean;

  constructor(
    readonly options: PostgresOptions,
    migrations: readonly Migration[],
  ) {
    super();
    this.migrations = inNameOrder(migrations);
    this.prepared = options.preparedStatements ?? true;
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
    // Features compile with it and run through `execute`/`transaction` (timed, errors translated).
    this.kysely = new Kysely<Tables>({ dialect: new PostgresDialect({ pool: this.pool }) });
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

  /** Closed last, after the HTTP server and every feature have stopped using it. */
  async onApplicationShutdown(): Promise<void> {
    await this.pool.end();
  }

  async ping(): Promise<void> {
    const { rows } = await this.execute('answer the readiness check', appliedMigrationsQuery(this.kysely));
    checkMigrated('PostgreSQL', rows, this.migrations);
  }

  async execute<Row>(action: string, query: CompiledQuery<Row>): Promise<StatementResult<Row>> {
    try {
      return await this.executeOn(this.pool, query);
    } catch (error) {
      throw this.translate(error, action);
    }
  }

  /** A compiled statement on `on` (the pool, or a transaction's client), timed; errors as the driver threw them. */
  private async executeOn<Row>(on: Pool | PoolClient, query: CompiledQuery<Row>): Promise<StatementResult<Row>> {
    const name = this.prepared ? (query as NamedQuery<Row>)[STATEMENT_NAME] : undefined;
    const { rows, rowCount } = await this.timedQuery<Row & QueryResultRow>(on, query.sql, [...query.parameters], name);
    return { rows, affectedRows: rowCount ?? 0 };
  }

  /**
   * A statement that fails with pg's "Query read timeout" once the server has held it for
   * `queryTimeoutMs`; on a pooled query the pool then closes that connection instead of lending it again.
   */
  private timedQuery<R extends QueryResultRow>(
    on: Pool | PoolClient,
    text: string,
    values: unknown[],
    /** A prepared statement's name (fixed-text statements only: see the class); unnamed without it. */
    name?: string,
  ): Promise<QueryResult<R>> {
    // pg reads `query_timeout` per query; @types/pg's QueryConfig does not declare it.
    const config: QueryConfig & { query_timeout: number } = {
      text,
      values,
      query_timeout: this.options.queryTimeoutMs + CLIENT_TIMEOUT_MARGIN_MS,
    };
    if (name !== undefined) config.name = name;
    return on.query<R>(config);
  }

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
    try {
      return await this.onClient(begin.join('; '), (client) =>
        work(new PostgresTransaction((query) => this.executeOn(client, query))),
      );
    } catch (error) {
      // A statement's error (or the connection's, BEGIN's, COMMIT's) is the driver's; the work's own passes.
      throw isDriverError(error) ? this.translate(error, action) : error;
    }
  }

  /**
   * Runs `work` in one transaction on one connection: `begin` (BEGIN and the constant statements
   * sent with it in one round trip: no parameters, the simple protocol), work, COMMIT. On failure the
   * connection is destroyed, not rolled back and lent out again: it may be mid-statement, broken, or
   * queued behind a lock, and closing it ends the transaction on the server at once. Errors of the
   * connection, BEGIN and COMMIT are marked as the driver's.
   */
  private async onClient<T>(begin: string, work: (client: PoolClient) => T | Promise<T>): Promise<T> {
    let client: PoolClient;
    try {
      client = await this.pool.connect();
    } catch (error) {
      throw driverError(error);
    }
    let failure: Error | undefined;
    // A connection that breaks while checked out emits 'error' (the pool listens only to idle ones);
    // unheard, that would end the process. The statement in flight fails with it anyway.
    const onError = (error: Error) => (failure ??= error);
    client.on('error', onError);
    try {
      await this.timedQuery(client, begin, []).catch((error) => {
        throw driverError(error);
      });
      const result = await work(client);
      await this.timedQuery(client, 'COMMIT', []).catch((error) => {
        throw driverError(error);
      });
      return result;
    } catch (error) {
      failure = error as Error;
      throw error;
    } finally {
      client.off('error', onError);
      client.release(failure);
    }
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

  /**
   * Applies the missing migrations (see `migrate`) on a connection of its own, without the
   * statement and lock timeouts that bound every request: a step may take long, or wait for
   * another instance's. Kysely's migrator serialises instances with an advisory lock.
   */
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
  lockLegacy: async (transaction) => void (await POSTGRES_LEGACY_LOCK.execute(transaction)),
  hasLegacyTable: async (transaction) => {
    const { rows } = await sql<{
      found: boolean;
    }>`SELECT to_regclass('schema_migrations') IS NOT NULL AS found`.execute(transaction);
    return rows[0].found;
  },
};

/** A constant of our own code as an SQL string literal. */
function literal(text: string): string {
  return `'${text.replace(/'/g, "''")}'`;
}

/** A table name of our own code as an SQL identifier. */
function identifier(name: string): string {
  return `"${name.replace(/"/g, '""')}"`;
}

/** host:port/database of a connection URL, without user, password or parameters. */
function locationOf(url: string): string {
  try {
    const { hostname, port, pathname } = new URL(url);
    return `${hostname || 'localhost'}:${port || '5432'}/${decodeURIComponent(pathname.slice(1)) || '(default database)'}`;
  } catch {
    return '(unparsable URL)';
  }
}
