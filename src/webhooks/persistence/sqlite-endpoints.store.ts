import BetterSqlite3 from 'better-sqlite3';
import { retryWhileBusy, SqliteDatabase } from '../../database/sqlite-database';
import { sqliteFailure } from '../../database/sqlite-errors';
import { Endpoint, EndpointChanges, NewEndpoint, SigningSecret } from '../endpoints/endpoint';
import { EndpointLimitError, EndpointsStore, EndpointUrlTakenError } from '../endpoints/endpoints.store';
import { SecretsKeyError } from './secrets-cipher';
import { CONFIGURED_SECRETS, SecretsColumn } from './secrets-column';

interface EndpointRow {
  id: string;
  url: string;
  description: string;
  disabled: bigint;
  disabled_reason: string | null;
  source: 'api' | 'config';
  created_at: bigint;
  updated_at: bigint;
}

const COLUMNS = 'id, url, description, disabled, disabled_reason, source, created_at, updated_at';

/** Endpoints in the SQLite file; every change is committed (and fsynced) before it is answered. */
export class SqliteEndpointsStore extends EndpointsStore {
  private statements?: ReturnType<typeof prepare>;

  constructor(
    private readonly database: SqliteDatabase,
    private readonly secretsColumn: SecretsColumn,
  ) {
    super();
  }

  create(endpoint: NewEndpoint, maxApiEndpoints: number): Promise<Endpoint> {
    // The count and the insert share one BEGIN IMMEDIATE: every writer of the file takes turns.
    return this.write('SQLite failed to store an endpoint', (s) => {
      if (Number(s.apiCount.get()) >= maxApiEndpoints) throw new EndpointLimitError(maxApiEndpoints);
      const now = Date.now();
      try {
        s.insert.run({
          ...endpoint,
          disabled: endpoint.disabled ? 1 : 0,
          secrets: this.secretsColumn.write([{ secret: endpoint.secret }]),
          now,
        });
      } catch (error) {
        if ((error as { code?: string }).code === 'SQLITE_CONSTRAINT_UNIQUE')
          throw new EndpointUrlTakenError(endpoint.url);
        throw error;
      }
      return toEndpoint(s.get.get(endpoint.id)!);
    });
  }

  async list(limit: number, after?: string): Promise<Endpoint[]> {
    return this.read((s) => (after === undefined ? s.first.all(limit) : s.after.all(after, limit)).map(toEndpoint));
  }

  async get(id: string): Promise<Endpoint | undefined> {
    return this.read((s) => {
      const row = s.get.get(id);
      return row && toEndpoint(row);
    });
  }

  update(id: string, changes: EndpointChanges): Promise<Endpoint | undefined> {
    return this.write('SQLite failed to update an endpoint', (s) => {
      const before = s.get.get(id);
      if (before === undefined) return undefined;
      const disabled = changes.disabled ?? before.disabled === 1n;
      try {
        s.update.run({
          id,
          url: changes.url ?? before.url,
          description: changes.description ?? before.description,
          disabled: disabled ? 1 : 0,
          // A re-enabled endpoint starts afresh: no reason, no backoff, no failures counted.
          reenabled: changes.disabled === false ? 1 : 0,
          now: Date.now(),
        });
      } catch (error) {
        if ((error as { code?: string }).code === 'SQLITE_CONSTRAINT_UNIQUE')
          throw new EndpointUrlTakenError(changes.url!);
        throw error;
      }
      return toEndpoint(s.get.get(id)!);
    });
  }

  delete(id: string): Promise<boolean> {
    return this.write('SQLite failed to delete an endpoint', (s) => s.remove(id));
  }

  async secrets(id: string): Promise<readonly SigningSecret[] | undefined> {
    return this.read((s) => {
      const secrets = s.secrets.get(id);
      return secrets === undefined ? undefined : this.secretsColumn.read(secrets);
    });
  }

  updateSecrets(id: string, change: (secrets: readonly SigningSecret[]) => SigningSecret[]): Promise<boolean> {
    return this.write('SQLite failed to rotate a secret', (s) => {
      const secrets = s.secrets.get(id);
      if (secrets === undefined) return false;
      const next = this.secretsColumn.write(change(this.secretsColumn.read(secrets)));
      s.setSecrets.run({ id, secrets: next, now: Date.now() });
      return true;
    });
  }

  reconcile(urls: readonly string[], newId: () => string) {
    return this.write('SQLite failed to reconcile the endpoints of WEBHOOK_URLS', (s) => {
      const now = Date.now();
      let added = 0;
      for (const url of urls) {
        if (s.sourceOf.get(url) === undefined) added++;
        s.upsertConfig.run({ id: newId(), url, secrets: CONFIGURED_SECRETS, now });
      }
      let removed = 0;
      for (const id of s.configIds.all()) {
        if (!urls.includes(s.urlOf.get(id)!)) removed += s.remove(id) ? 1 : 0;
      }
      return { added, removed };
    });
  }

  reseal(): Promise<number> {
    return this.write('SQLite failed to encrypt the endpoint secrets', (s) => {
      let changed = 0;
      for (const { id, secrets } of s.allSecrets.all()) {
        const sealed = this.secretsColumn.resealed(secrets, id);
        if (sealed === undefined) continue;
        s.reseal.run({ id, secrets: sealed });
        changed++;
      }
      return changed;
    });
  }

  private read<T>(work: (statements: ReturnType<typeof prepare>) => T): T {
    try {
      this.statements ??= prepare(this.database.connection);
      return work(this.statements);
    } catch (error) {
      if (error instanceof SecretsKeyError) throw error;
      throw sqliteFailure('SQLite failed to read the webhook endpoints', error);
    }
  }

  /** One write transaction, tried again off the event loop while another process holds the file. */
  private write<T>(message: string, work: (statements: ReturnType<typeof prepare>) => T): Promise<T> {
    return retryWhileBusy(() => {
      try {
        this.statements ??= prepare(this.database.connection);
        return this.statements.transaction(() => work(this.statements!));
      } catch (error) {
        if (
          error instanceof EndpointUrlTakenError ||
          error instanceof EndpointLimitError ||
          error instanceof SecretsKeyError
        )
          throw error;
        throw sqliteFailure(message, error);
      }
    });
  }
}

function prepare(db: BetterSqlite3.Database) {
  const get = db.prepare<[string], EndpointRow>(`SELECT ${COLUMNS} FROM webhook_endpoints WHERE id = ?`);
  const attemptsOf = db.prepare<[string]>(
    'DELETE FROM webhook_attempts WHERE delivery_id IN (SELECT id FROM webhook_deliveries WHERE endpoint_id = ?)',
  );
  const deliveriesOf = db.prepare<[string]>('DELETE FROM webhook_deliveries WHERE endpoint_id = ?');
  const endpoint = db.prepare<[string]>('DELETE FROM webhook_endpoints WHERE id = ?');
  const sourceOf = db.prepare<[string], { source: string }>('SELECT source FROM webhook_endpoints WHERE url = ?');
  return {
    get,
    first: db.prepare<[number], EndpointRow>(`SELECT ${COLUMNS} FROM webhook_endpoints ORDER BY id LIMIT ?`),
    after: db.prepare<[string, number], EndpointRow>(
      `SELECT ${COLUMNS} FROM webhook_endpoints WHERE id > ? ORDER BY id LIMIT ?`,
    ),
    insert: db.prepare(
      `INSERT INTO webhook_endpoints (id, url, description, source, disabled, secrets, created_at, updated_at)
       VALUES (@id, @url, @description, 'api', @disabled, @secrets, @now, @now)`,
    ),
    update: db.prepare(
      `UPDATE webhook_endpoints
       SET url = @url, description = @description, disabled = @disabled, updated_at = @now,
           disabled_reason = CASE WHEN @reenabled = 1 OR @disabled = 0 THEN NULL ELSE disabled_reason END,
           failures = CASE WHEN @reenabled = 1 THEN 0 ELSE failures END,
           failing_since = CASE WHEN @reenabled = 1 THEN NULL ELSE failing_since END,
           paused_until = CASE WHEN @reenabled = 1 THEN NULL ELSE paused_until END,
           signals = CASE WHEN @reenabled = 1 THEN 0 ELSE signals END,
           throttled = CASE WHEN @reenabled = 1 THEN 0 ELSE throttled END,
           backoffs = CASE WHEN @reenabled = 1 THEN 0 ELSE backoffs END,
           in_flight_cap = CASE WHEN @reenabled = 1 THEN NULL ELSE in_flight_cap END
       WHERE id = @id`,
    ),
    secrets: db.prepare<[string], string>('SELECT secrets FROM webhook_endpoints WHERE id = ?').pluck(),
    setSecrets: db.prepare('UPDATE webhook_endpoints SET secrets = @secrets, updated_at = @now WHERE id = @id'),
    // The same secrets, stored anew: not a change anyone made.
    reseal: db.prepare('UPDATE webhook_endpoints SET secrets = @secrets WHERE id = @id'),
    // A config endpoint that stays keeps its `disabled` (an operator's pause, or the service's);
    // an api endpoint that the configuration now declares becomes config, enabled.
    upsertConfig: db.prepare(
      `INSERT INTO webhook_endpoints (id, url, source, secrets, created_at, updated_at)
       VALUES (@id, @url, 'config', @secrets, @now, @now)
       ON CONFLICT (url) DO UPDATE SET secrets = excluded.secrets,
         disabled = CASE WHEN source = 'config' THEN disabled ELSE 0 END,
         disabled_reason = CASE WHEN source = 'config' THEN disabled_reason END,
         updated_at = CASE WHEN source = 'config' THEN updated_at ELSE excluded.updated_at END,
         source = 'config'`,
    ),
    apiCount: db.prepare<[], bigint>("SELECT count(*) FROM webhook_endpoints WHERE source = 'api'").pluck(),
    allSecrets: db.prepare<[], { id: string; secrets: string }>('SELECT id, secrets FROM webhook_endpoints'),
    sourceOf,
    configIds: db.prepare<[], string>("SELECT id FROM webhook_endpoints WHERE source = 'config'").pluck(),
    urlOf: db.prepare<[string], string>('SELECT url FROM webhook_endpoints WHERE id = ?').pluck(),
    /** The endpoint, its deliveries and their attempts. */
    remove: (id: string) => {
      attemptsOf.run(id);
      deliveriesOf.run(id);
      return endpoint.run(id).changes === 1;
    },
    transaction: <T>(work: () => T): T => db.transaction(work).immediate(),
  };
}

function toEndpoint(row: EndpointRow): Endpoint {
  return {
    id: row.id,
    url: row.url,
    description: row.description,
    disabled: row.disabled === 1n,
    ...(row.disabled_reason === null ? {} : { disabledReason: row.disabled_reason }),
    source: row.source,
    createdAtMs: Number(row.created_at),
    updatedAtMs: Number(row.updated_at),
  };
}
