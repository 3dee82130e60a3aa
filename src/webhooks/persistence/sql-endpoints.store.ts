import { Injectable } from '@nestjs/common';
import { CompiledQuery, Kysely, RawBuilder, sql } from 'kysely';
import { Database } from '../../database/database';
import { PostgresDatabase, PostgresTransaction } from '../../database/postgres-database';
import { retryWhileBusy, SqliteDatabase } from '../../database/sqlite-database';
import { sqliteFailure } from '../../database/sqlite-errors';
import { StatementResult } from '../../database/transaction';
import { Tables } from '../../database/tables';
import { DEFAULT_EVENT_TYPES, Endpoint, EndpointChanges, NewEndpoint, SigningSecret } from '../endpoints/endpoint';
import { EndpointLimitError, EndpointsStore, EndpointUrlTakenError } from '../endpoints/endpoints.store';
import { SecretsKeyError } from './secrets-cipher';
import { OUTBOX_WRITES_DRAINED } from './sql-outbox.store';
import { CONFIGURED_SECRETS, SecretsColumn } from './secrets-column';
import './webhooks.tables';

interface EndpointRow {
  id: string;
  url: string;
  description: string;
  disabled: bigint | boolean;
  disabled_reason: string | null;
  source: 'api' | 'config';
  created_at_ms: number | bigint;
  updated_at_ms: number | bigint;
  event_types: string;
}

/**
 * A unit of work inside one transaction, written once for both stores: it yields each compiled
 * statement and receives its result (or has the driver's error thrown in at the `yield`). SQLite
 * runs it synchronously from BEGIN IMMEDIATE to COMMIT, so nothing else of this process comes
 * between its statements; PostgreSQL runs it on one pooled connection.
 */
type Work<T> = Generator<CompiledQuery<unknown>, T, StatementResult<unknown>>;

/** One statement of a `Work`: `const { rows } = yield* run(query)`. */
function* run<Row>(
  query: CompiledQuery<Row>,
): Generator<CompiledQuery<unknown>, StatementResult<Row>, StatementResult<unknown>> {
  return (yield query) as StatementResult<Row>;
}

/** What the two stores do differently, and only that: each written in its own named method below. */
interface EndpointsDialect {
  /** The time of a write: Unix milliseconds on SQLite (one instance, one clock), the server's clock on PostgreSQL. */
  now(): RawBuilder<number>;
  /** A time column in Unix milliseconds. */
  millis(column: 'created_at' | 'updated_at'): RawBuilder<number>;
  /** Whether `SELECT … FOR UPDATE` locks rows (PostgreSQL); SQLite's BEGIN IMMEDIATE locks the whole file. */
  readonly locksRows: boolean;
  isUniqueViolation(error: unknown): boolean;
  /**
   * Runs `work` in one transaction. `lockEndpoints`: also take the lock that every change to the set
   * of endpoints takes (a create, the reconcile, the reseal), so instances take turns. `drainOutbox`:
   * first wait for the outbox writes in flight and hold back new ones until this commits
   * (`OUTBOX_WRITES_DRAINED`, PostgreSQL), for a change to which endpoints get new events. Driver
   * errors become the port's (`StorageError`, …) saying it failed to `action`; the endpoint errors and
   * a `SecretsKeyError` pass as they are.
   */
  transaction<T>(action: string, work: () => Work<T>, lockEndpoints: boolean, drainOutbox?: boolean): Promise<T>;
}

/** PostgreSQL: taken by every change to the set of endpoints; instances starting or creating together take turns. */
const ENDPOINTS_LOCK = "SELECT pg_advisory_xact_lock(hashtext('plant-store:webhook-endpoints'))";
const PG_UNIQUE_VIOLATION = '23505';

/**
 * The webhook endpoints, in whichever store `DatabaseModule` chose, every query written once with
 * the typed query builder. What truly differs (times, row locks, the unique-violation code, how a
 * transaction runs) is the `EndpointsDialect` of each store (`sqliteDialect`, `postgresDialect`).
 *
 * SQLite: every change is one BEGIN IMMEDIATE transaction, committed (and fsynced) before it is
 * answered, tried again off the event loop while another process holds the file. PostgreSQL: shared
 * by every instance; times from the server's clock; the cap on API endpoints and the reconcile are
 * settled under one advisory lock.
 */
@Injectable()
export class SqlEndpointsStore extends EndpointsStore {
  private readonly dialect: EndpointsDialect;
  private readonly db: Kysely<Tables>;

  constructor(
    private readonly database: Database,
    db: Kysely<Tables>,
    private readonly secretsColumn: SecretsColumn,
  ) {
    super();
    this.db = db;
    this.dialect = database.choose({
      sqlite: (store) => sqliteDialect(store),
      postgres: (store) => postgresDialect(store),
    });
  }

  create(endpoint: NewEndpoint, maxApiEndpoints: number): Promise<Endpoint> {
    const secrets = this.secretsColumn.write([{ secret: endpoint.secret }], endpoint.id);
    const { db, dialect } = this;
    const columns = this.columns();
    // Under the endpoints' lock (PostgreSQL) or BEGIN IMMEDIATE (SQLite), the count and the insert are
    // one step for every instance.
    return this.dialect.transaction(
      'store an endpoint',
      function* () {
        const { rows } = yield* run(
          db
            .selectFrom('webhook_endpoints')
            .select((eb) => eb.fn.countAll<number | bigint | string>().as('count'))
            .where('source', '=', 'api')
            .compile(),
        );
        if (Number(rows[0].count) >= maxApiEndpoints) throw new EndpointLimitError(maxApiEndpoints);
        const now = dialect.now();
        try {
          const inserted = yield* run(
            db
              .insertInto('webhook_endpoints')
              .values({
                id: endpoint.id,
                url: endpoint.url,
                description: endpoint.description,
                source: 'api',
                disabled: flag(endpoint.disabled),
                secrets,
                event_types: JSON.stringify(endpoint.eventTypes ?? DEFAULT_EVENT_TYPES),
                created_at: now,
                updated_at: now,
              })
              .returning(columns)
              .compile(),
          );
          return toEndpoint(inserted.rows[0]);
        } catch (error) {
          if (dialect.isUniqueViolation(error)) throw new EndpointUrlTakenError(endpoint.url);
          throw error;
        }
      },
      true,
      !endpoint.disabled, // an enabled endpoint gets the events of every create that commits after this
    );
  }

  async list(limit: number, after?: string): Promise<Endpoint[]> {
    const query = this.db
      .selectFrom('webhook_endpoints')
      .select(this.columns())
      .$if(after !== undefined, (qb) => qb.where('id', '>', after!))
      .orderBy('id')
      .limit(limit)
      .compile();
    const { rows } = await this.database.execute('read the webhook endpoints', query);
    return rows.map(toEndpoint);
  }

  async get(id: string): Promise<Endpoint | undefined> {
    const query = this.db.selectFrom('webhook_endpoints').select(this.columns()).where('id', '=', id).compile();
    const { rows } = await this.database.execute('read a webhook endpoint', query);
    return rows.length === 0 ? undefined : toEndpoint(rows[0]);
  }

  update(id: string, changes: EndpointChanges): Promise<Endpoint | undefined> {
    const { url, description, disabled, eventTypes } = changes;
    const query = this.db
      .updateTable('webhook_endpoints')
      .set({
        ...(url === undefined ? {} : { url }),
        ...(description === undefined ? {} : { description }),
        ...(disabled === undefined ? {} : { disabled: flag(disabled) }),
        ...(eventTypes === undefined ? {} : { event_types: JSON.stringify(eventTypes) }),
        updated_at: this.dialect.now(),
        // A re-enabled endpoint starts afresh: no reason, no backoff, no failures or signals counted.
        ...(disabled === false
          ? {
              disabled_reason: null,
              failures: 0,
              failing_since: null,
              paused_until: null,
              signals: 0,
              throttled: flag(false),
              backoffs: 0,
              in_flight_cap: null,
            }
          : {}),
      })
      .where('id', '=', id)
      .returning(this.columns())
      .compile();
    const { dialect } = this;
    return this.dialect.transaction(
      'update an endpoint',
      function* () {
        try {
          const { rows } = yield* run(query);
          return rows.length === 0 ? undefined : toEndpoint(rows[0]);
        } catch (error) {
          if (url !== undefined && dialect.isUniqueViolation(error)) throw new EndpointUrlTakenError(url);
          throw error;
        }
      },
      false,
      // Enabling it, or subscribing it to more: the creates that commit after this owe it their events.
      disabled === false || eventTypes !== undefined,
    );
  }

  delete(id: string): Promise<boolean> {
    const remove = () => this.remove(id);
    // Drained first, so no create in flight adds a delivery for it after its deliveries are deleted.
    return this.dialect.transaction('delete an endpoint', remove, false, true);
  }

  async secrets(id: string): Promise<readonly SigningSecret[] | undefined> {
    const query = this.db.selectFrom('webhook_endpoints').select('secrets').where('id', '=', id).compile();
    const { rows } = await this.database.execute('read an endpoint secret', query);
    return rows.length === 0 ? undefined : this.secretsColumn.read(rows[0].secrets, id);
  }

  updateSecrets(id: string, change: (secrets: readonly SigningSecret[]) => SigningSecret[]): Promise<boolean> {
    const { db, dialect, secretsColumn } = this;
    return this.dialect.transaction(
      'rotate a secret',
      function* () {
        const { rows } = yield* run(
          db
            .selectFrom('webhook_endpoints')
            .select('secrets')
            .where('id', '=', id)
            .$if(dialect.locksRows, (qb) => qb.forUpdate())
            .compile(),
        );
        if (rows.length === 0) return false;
        let current: SigningSecret[];
        try {
          current = secretsColumn.read(rows[0].secrets, id);
        } catch (error) {
          // A value that does not open in this row (altered, or copied from another) signs nothing: a
          // rotation replaces it. One whose key is missing stays, for the operator to give the key.
          if (!(error instanceof SecretsKeyError) || error.keyMissing) throw error;
          current = [];
        }
        const secrets = secretsColumn.write(change(current), id);
        yield* run(
          db
            .updateTable('webhook_endpoints')
            .set({ secrets, updated_at: dialect.now() })
            .where('id', '=', id)
            .compile(),
        );
        return true;
      },
      false,
    );
  }

  reconcile(urls: readonly string[], newId: () => string): Promise<{ added: number; removed: number }> {
    const { db, dialect } = this;
    const remove = (id: string) => this.remove(id);
    return this.dialect.transaction(
      'reconcile the endpoints of WEBHOOK_URLS',
      function* () {
        // Every row this may change or remove, locked first in id order (PostgreSQL), as the
        // dispatcher's record locks endpoints before their deliveries: the removals below then wait on
        // nothing that waits on them.
        const { rows: known } = yield* run(
          db
            .selectFrom('webhook_endpoints')
            .select(['id', 'url', 'source'])
            .where((eb) =>
              eb.or([eb('source', '=', 'config'), ...(urls.length === 0 ? [] : [eb('url', 'in', [...urls])])]),
            )
            .orderBy('id')
            .$if(dialect.locksRows, (qb) => qb.forUpdate())
            .compile(),
        );
        let added = 0;
        for (const url of urls) {
          if (!known.some((row) => row.url === url)) added++;
          const now = dialect.now();
          // A config endpoint that stays keeps its `disabled` (an operator's pause, or the service's);
          // an api endpoint that the configuration now declares becomes config, enabled.
          yield* run(
            db
              .insertInto('webhook_endpoints')
              .values({
                id: newId(),
                url,
                source: 'config',
                secrets: CONFIGURED_SECRETS,
                // WEBHOOK_URLS names no event type: its endpoints get the default, as before.
                event_types: JSON.stringify(DEFAULT_EVENT_TYPES),
                created_at: now,
                updated_at: now,
              })
              .onConflict((conflict) =>
                conflict.column('url').doUpdateSet((eb) => {
                  const wasConfig = eb('webhook_endpoints.source', '=', 'config');
                  return {
                    secrets: eb.ref('excluded.secrets'),
                    event_types: eb.ref('excluded.event_types'),
                    disabled: eb
                      .case()
                      .when(wasConfig)
                      .then(eb.ref('webhook_endpoints.disabled'))
                      .else(flag(false))
                      .end(),
                    disabled_reason: eb.case().when(wasConfig).then(eb.ref('webhook_endpoints.disabled_reason')).end(),
                    updated_at: eb.case().when(wasConfig).then(eb.ref('webhook_endpoints.updated_at')).else(now).end(),
                    source: 'config',
                  };
                }),
              )
              .compile(),
          );
        }
        let removed = 0;
        for (const row of known) {
          if (row.source !== 'config' || urls.includes(row.url)) continue;
          if (yield* remove(row.id)) removed++;
        }
        return { added, removed };
      },
      true,
      true, // it adds and enables endpoints, and removes others
    );
  }

  async reseal(): Promise<number> {
    const { db, dialect, secretsColumn } = this;
    const { changed, recorded } = await this.dialect.transaction(
      'seal the endpoint secrets',
      function* () {
        // Under the endpoints' lock: an instance starting at once sees the record once this one commits.
        const { rows: record } = yield* run(db.selectFrom('webhook_secrets_resealed').select('id').compile());
        const unbound = record.length === 0;
        const { rows } = yield* run(
          db
            .selectFrom('webhook_endpoints')
            .select(['id', 'secrets'])
            .orderBy('id') // the order every transaction locks endpoints in
            .$if(dialect.locksRows, (qb) => qb.forUpdate())
            .compile(),
        );
        let changed = 0;
        for (const { id, secrets } of rows) {
          const sealed = secretsColumn.resealed(secrets, id, unbound);
          if (sealed === undefined) continue;
          // The same secrets, stored anew: not a change anyone made, so `updated_at` stays.
          yield* run(db.updateTable('webhook_endpoints').set({ secrets: sealed }).where('id', '=', id).compile());
          changed++;
        }
        // Every value bound to no endpoint is sealed for its row now (or left held back): from here on
        // such a value was written or copied in later, and never opens. Only with a key, which seals them.
        if (unbound && secretsColumn.seals) {
          yield* run(
            db
              .insertInto('webhook_secrets_resealed')
              .values({ id: 1 })
              .onConflict((oc) => oc.doNothing())
              .compile(),
          );
        }
        return { changed, recorded: !unbound || secretsColumn.seals };
      },
      true,
    );
    if (recorded) secretsColumn.unboundClosed();
    return changed;
  }

  /**
   * Deletes an endpoint with its deliveries and their attempts; whether there was one. Its row is
   * locked first (PostgreSQL): endpoints before deliveries, as the dispatcher's record takes them.
   */
  private *remove(id: string): Work<boolean> {
    const { db, dialect } = this;
    if (dialect.locksRows) {
      yield* run(db.selectFrom('webhook_endpoints').select('id').where('id', '=', id).forUpdate().compile());
    }
    const deliveries = db.selectFrom('webhook_deliveries').select('id').where('endpoint_id', '=', id);
    yield* run(db.deleteFrom('webhook_attempts').where('delivery_id', 'in', deliveries).compile());
    yield* run(db.deleteFrom('webhook_deliveries').where('endpoint_id', '=', id).compile());
    const { affectedRows } = yield* run(db.deleteFrom('webhook_endpoints').where('id', '=', id).compile());
    return affectedRows === 1;
  }

  /** The columns of an `Endpoint`, its times in Unix milliseconds whatever the store. */
  private columns() {
    return [
      'id',
      'url',
      'description',
      'disabled',
      'disabled_reason',
      'source',
      this.dialect.millis('created_at').as('created_at_ms'),
      this.dialect.millis('updated_at').as('updated_at_ms'),
      'event_types',
    ] as const;
  }
}

/** A flag as both stores take it: SQL's TRUE and FALSE, which SQLite reads as 1 and 0. */
function flag(value: boolean): RawBuilder<boolean> {
  return value ? sql<boolean>`true` : sql<boolean>`false`;
}

/** Errors that already say what went wrong, in the port's or the feature's terms. */
function passes(error: unknown): boolean {
  return (
    error instanceof EndpointUrlTakenError || error instanceof EndpointLimitError || error instanceof SecretsKeyError
  );
}

// SQLite ------------------------------------------------------------------------------------

function sqliteDialect(store: SqliteDatabase): EndpointsDialect {
  return {
    now: () => sql<number>`${Date.now()}`,
    millis: (column) => sql<number>`${sql.ref(column)}`,
    locksRows: false,
    isUniqueViolation: (error) => (error as { code?: string }).code === 'SQLITE_CONSTRAINT_UNIQUE',
    // One BEGIN IMMEDIATE transaction, synchronously: every writer of the file takes turns, so the
    // lock is the transaction itself. Tried again off the event loop while another process holds it.
    transaction: <T>(action: string, work: () => Work<T>) =>
      retryWhileBusy(() => {
        try {
          return store.transaction((transaction) => runSynchronously(work(), (query) => transaction.execute(query)));
        } catch (error) {
          if (passes(error)) throw error;
          throw sqliteFailure(`SQLite failed to ${action}`, error);
        }
      }),
  };
}

function runSynchronously<T>(work: Work<T>, execute: (query: CompiledQuery<unknown>) => StatementResult<unknown>): T {
  let step = work.next();
  while (!step.done) {
    let result: StatementResult<unknown>;
    try {
      result = execute(step.value);
    } catch (error) {
      step = work.throw(error);
      continue;
    }
    step = work.next(result);
  }
  return step.value;
}

// PostgreSQL --------------------------------------------------------------------------------

function postgresDialect(store: PostgresDatabase): EndpointsDialect {
  return {
    // Typed as the builder takes a time (see webhooks.tables.ts): the server's clock, shared by every instance.
    now: () => sql<number>`clock_timestamp()`,
    millis: (column) => sql<number>`(extract(epoch FROM ${sql.ref(column)}) * 1000)::float8`,
    locksRows: true,
    isUniqueViolation: (error) => (error as { code?: string }).code === PG_UNIQUE_VIOLATION,
    transaction: async <T>(action: string, work: () => Work<T>, lockEndpoints: boolean, drainOutbox = false) => {
      try {
        // The locks are sent with the BEGIN, in one round trip: the endpoints' first, as every
        // transaction that takes both does.
        return await store.transaction(
          (client) => {
            const transaction = new PostgresTransaction(store, client);
            return runAsynchronously(work(), (query) => transaction.execute(query));
          },
          { begin: [...(lockEndpoints ? [ENDPOINTS_LOCK] : []), ...(drainOutbox ? [OUTBOX_WRITES_DRAINED] : [])] },
        );
      } catch (error) {
        if (passes(error)) throw error;
        throw store.translate(error, action);
      }
    },
  };
}

async function runAsynchronously<T>(
  work: Work<T>,
  execute: (query: CompiledQuery<unknown>) => Promise<StatementResult<unknown>>,
): Promise<T> {
  let step = work.next();
  while (!step.done) {
    let result: StatementResult<unknown>;
    try {
      result = await execute(step.value);
    } catch (error) {
      step = work.throw(error);
      continue;
    }
    step = work.next(result);
  }
  return step.value;
}

function toEndpoint(row: EndpointRow): Endpoint {
  return {
    id: row.id,
    url: row.url,
    description: row.description,
    disabled: row.disabled === true || row.disabled === 1n,
    ...(row.disabled_reason === null ? {} : { disabledReason: row.disabled_reason }),
    source: row.source,
    eventTypes: JSON.parse(row.event_types) as string[],
    createdAtMs: Math.round(Number(row.created_at_ms)),
    updatedAtMs: Math.round(Number(row.updated_at_ms)),
  };
}
