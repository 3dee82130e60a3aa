import { PoolClient } from 'pg';
import { PostgresDatabase } from '../../database/postgres-database';
import { Endpoint, EndpointChanges, NewEndpoint, SigningSecret } from '../endpoints/endpoint';
import { EndpointLimitError, EndpointsStore, EndpointUrlTakenError } from '../endpoints/endpoints.store';
import { SecretsKeyError } from './secrets-cipher';
import { CONFIGURED_SECRETS, SecretsColumn } from './secrets-column';

interface EndpointRow {
  id: string;
  url: string;
  description: string;
  disabled: boolean;
  disabled_reason: string | null;
  source: 'api' | 'config';
  created_at_ms: number;
  updated_at_ms: number;
}

const COLUMNS = `id, url, description, disabled, disabled_reason, source,
                 (extract(epoch FROM created_at) * 1000)::float8 AS created_at_ms,
                 (extract(epoch FROM updated_at) * 1000)::float8 AS updated_at_ms`;
const UNIQUE_VIOLATION = '23505';
/** Taken by every change to the set of endpoints (a create, the reconcile): instances starting or creating together take turns. */
const ENDPOINTS_LOCK = "SELECT pg_advisory_xact_lock(hashtext('plant-store:webhook-endpoints'))";

/** Deletes an endpoint with its deliveries and their attempts, in one statement. */
const REMOVE = `WITH gone AS (DELETE FROM webhook_deliveries WHERE endpoint_id = $1 RETURNING id),
                     attempts AS (DELETE FROM webhook_attempts WHERE delivery_id IN (SELECT id FROM gone))
                DELETE FROM webhook_endpoints WHERE id = $1`;

/** Endpoints in PostgreSQL, shared by every instance; times from the server's clock. */
export class PostgresEndpointsStore extends EndpointsStore {
  constructor(
    private readonly database: PostgresDatabase,
    private readonly secretsColumn: SecretsColumn,
  ) {
    super();
  }

  async create(endpoint: NewEndpoint, maxApiEndpoints: number): Promise<Endpoint> {
    const secrets = this.secretsColumn.write([{ secret: endpoint.secret }]);
    let rows: EndpointRow[];
    try {
      // The lock (sent with the BEGIN) makes the count and the insert one step across instances; at
      // the cap the statement inserts nothing, and the transaction commits as usual.
      rows = await this.database.transaction(
        async (client) =>
          (
            await this.database.timedQuery<EndpointRow>(
              client,
              `INSERT INTO webhook_endpoints (id, url, description, source, disabled, secrets)
               SELECT $1, $2, $3, 'api', $4, $5
               WHERE (SELECT count(*) FROM webhook_endpoints WHERE source = 'api') < $6
               RETURNING ${COLUMNS}`,
              [endpoint.id, endpoint.url, endpoint.description, endpoint.disabled, secrets, maxApiEndpoints],
            )
          ).rows,
        { begin: [ENDPOINTS_LOCK] },
      );
    } catch (error) {
      throw this.translate(error, 'store an endpoint', endpoint.url);
    }
    if (rows.length === 0) throw new EndpointLimitError(maxApiEndpoints);
    return toEndpoint(rows[0]);
  }

  async list(limit: number, after?: string): Promise<Endpoint[]> {
    const { rows } = await this.database.query<EndpointRow>(
      'list endpoints',
      `SELECT ${COLUMNS} FROM webhook_endpoints WHERE $1::text IS NULL OR id > $1 ORDER BY id LIMIT $2`,
      [after ?? null, limit],
    );
    return rows.map(toEndpoint);
  }

  async get(id: string): Promise<Endpoint | undefined> {
    const { rows } = await this.database.query<EndpointRow>(
      'read an endpoint',
      `SELECT ${COLUMNS} FROM webhook_endpoints WHERE id = $1`,
      [id],
    );
    return rows[0] && toEndpoint(rows[0]);
  }

  async update(id: string, changes: EndpointChanges): Promise<Endpoint | undefined> {
    try {
      const { rows } = await this.database.timedQuery<EndpointRow>(
        this.database.pool,
        // A re-enabled endpoint starts afresh: no reason, no backoff, no failures counted.
        `UPDATE webhook_endpoints
         SET url = coalesce($2, url), description = coalesce($3, description), disabled = coalesce($4, disabled),
             updated_at = clock_timestamp(),
             disabled_reason = CASE WHEN coalesce($4, disabled) THEN disabled_reason END,
             failures = CASE WHEN $4 = false THEN 0 ELSE failures END,
             failing_since = CASE WHEN $4 = false THEN NULL ELSE failing_since END,
             paused_until = CASE WHEN $4 = false THEN NULL ELSE paused_until END,
             signals = CASE WHEN $4 = false THEN 0 ELSE signals END,
             throttled = CASE WHEN $4 = false THEN false ELSE throttled END,
             backoffs = CASE WHEN $4 = false THEN 0 ELSE backoffs END,
             in_flight_cap = CASE WHEN $4 = false THEN NULL ELSE in_flight_cap END
         WHERE id = $1 RETURNING ${COLUMNS}`,
        [id, changes.url ?? null, changes.description ?? null, changes.disabled ?? null],
      );
      return rows[0] && toEndpoint(rows[0]);
    } catch (error) {
      throw this.translate(error, 'update an endpoint', changes.url);
    }
  }

  async delete(id: string): Promise<boolean> {
    const { rowCount } = await this.database.query('delete an endpoint', REMOVE, [id]);
    return rowCount === 1;
  }

  async secrets(id: string): Promise<readonly SigningSecret[] | undefined> {
    const { rows } = await this.database.query<{ secrets: string }>(
      'read an endpoint secret',
      'SELECT secrets FROM webhook_endpoints WHERE id = $1',
      [id],
    );
    return rows[0] && this.secretsColumn.read(rows[0].secrets);
  }

  async updateSecrets(id: string, change: (secrets: readonly SigningSecret[]) => SigningSecret[]): Promise<boolean> {
    return this.inTransaction('rotate a secret', async (client) => {
      const { rows } = await this.database.timedQuery<{ secrets: string }>(
        client,
        'SELECT secrets FROM webhook_endpoints WHERE id = $1 FOR UPDATE',
        [id],
      );
      if (rows.length === 0) return false;
      await this.database.timedQuery(
        client,
        'UPDATE webhook_endpoints SET secrets = $2, updated_at = clock_timestamp() WHERE id = $1',
        [id, this.secretsColumn.write(change(this.secretsColumn.read(rows[0].secrets)))],
      );
      return true;
    });
  }

  async reconcile(urls: readonly string[], newId: () => string) {
    return this.inTransaction('reconcile the endpoints of WEBHOOK_URLS', async (client) => {
      // Instances starting together take turns.
      await this.database.timedQuery(client, ENDPOINTS_LOCK, []);
      const { rows: known } = await this.database.timedQuery<{ id: string; url: string; source: string }>(
        client,
        'SELECT id, url, source FROM webhook_endpoints WHERE url = ANY($1) OR source = $2',
        [urls, 'config'],
      );
      let added = 0;
      for (const url of urls) {
        if (!known.some((row) => row.url === url)) added++;
        // A config endpoint that stays keeps its `disabled` (an operator's pause, or the service's);
        // an api endpoint that the configuration now declares becomes config, enabled.
        await this.database.timedQuery(
          client,
          `INSERT INTO webhook_endpoints AS e (id, url, source, secrets) VALUES ($1, $2, 'config', $3)
           ON CONFLICT (url) DO UPDATE SET secrets = excluded.secrets,
             disabled = CASE WHEN e.source = 'config' THEN e.disabled ELSE false END,
             disabled_reason = CASE WHEN e.source = 'config' THEN e.disabled_reason END,
             updated_at = CASE WHEN e.source = 'config' THEN e.updated_at ELSE clock_timestamp() END,
             source = 'config'`,
          [newId(), url, CONFIGURED_SECRETS],
        );
      }
      let removed = 0;
      for (const row of known) {
        if (row.source !== 'config' || urls.includes(row.url)) continue;
        removed += (await this.database.timedQuery(client, REMOVE, [row.id])).rowCount ?? 0;
      }
      return { added, removed };
    });
  }

  async reseal(): Promise<number> {
    return this.inTransaction('encrypt the endpoint secrets', async (client) => {
      await this.database.timedQuery(client, ENDPOINTS_LOCK, []);
      const { rows } = await this.database.timedQuery<{ id: string; secrets: string }>(
        client,
        'SELECT id, secrets FROM webhook_endpoints FOR UPDATE',
        [],
      );
      let changed = 0;
      for (const { id, secrets } of rows) {
        const sealed = this.secretsColumn.resealed(secrets, id);
        if (sealed === undefined) continue;
        await this.database.timedQuery(client, 'UPDATE webhook_endpoints SET secrets = $2 WHERE id = $1', [id, sealed]);
        changed++;
      }
      return changed;
    });
  }

  private async inTransaction<T>(action: string, work: (client: PoolClient) => Promise<T>): Promise<T> {
    try {
      return await this.database.transaction(work);
    } catch (error) {
      if (error instanceof SecretsKeyError) throw error;
      throw this.database.translate(error, action);
    }
  }

  private translate(error: unknown, action: string, url: string | undefined): Error {
    if ((error as { code?: string }).code === UNIQUE_VIOLATION && url !== undefined)
      return new EndpointUrlTakenError(url);
    return this.database.translate(error, action);
  }
}

function toEndpoint(row: EndpointRow): Endpoint {
  return {
    id: row.id,
    url: row.url,
    description: row.description,
    disabled: row.disabled,
    ...(row.disabled_reason === null ? {} : { disabledReason: row.disabled_reason }),
    source: row.source,
    createdAtMs: Math.round(row.created_at_ms),
    updatedAtMs: Math.round(row.updated_at_ms),
  };
}
