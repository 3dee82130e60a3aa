import { Injectable } from '@nestjs/common';
import { Kysely, Selection, sql } from 'kysely';
import { Database } from '../../database/database';
import { isUniqueViolation } from '../../database/driver-errors';
import { Transaction, TransactionOptions } from '../../database/transaction';
import { Tables } from '../../database/tables';
import { DEFAULT_EVENT_TYPES, Endpoint, EndpointChanges, NewEndpoint, SigningSecret } from '../endpoints/endpoint';
import { EndpointLimitError, EndpointsStore, EndpointUrlTakenError } from '../endpoints/endpoints.store';
import { SecretsKeyError } from '../secrets/secrets-cipher';
import { CONFIGURED_SECRETS, SecretsColumn } from '../secrets/secrets-column';
import { OUTBOX_WRITES_DRAINED } from './sql-outbox.store';
import { msOf, StoreClock, storeClock } from './store-clock';
import { flagOf } from './webhooks.tables';

/**
 * Changes to the set of endpoints (a create, the reconcile, the reseal) take turns across instances
 * (PostgreSQL; SQLite's BEGIN IMMEDIATE already serialises them).
 */
const LOCKED: TransactionOptions = { locks: ['plant-store:webhook-endpoints'] };
const LOCKED_AND_DRAINED: TransactionOptions = { ...LOCKED, ...OUTBOX_WRITES_DRAINED };

/**
 * The webhook endpoints, written once for both stores. Row locks (`forUpdate`) are PostgreSQL's;
 * SQLite's BEGIN IMMEDIATE holds the whole file instead.
 */
@Injectable()
export class SqlEndpointsStore extends EndpointsStore {
  private readonly clock: StoreClock;

  constructor(
    private readonly database: Database,
    private readonly db: Kysely<Tables>,
    private readonly secretsColumn: SecretsColumn,
  ) {
    super();
    this.clock = storeClock(database);
  }

  create(endpoint: NewEndpoint, maxApiEndpoints: number): Promise<Endpoint> {
    const secrets = this.secretsColumn.write([{ secret: endpoint.secret }], endpoint.id);
    const { db, clock } = this;
    // The count and the insert are one step for every instance (`LOCKED`).
    return this.database.transaction(
      'store an endpoint',
      async (tx) => {
        const { rows } = await tx.execute(
          db
            .selectFrom('webhook_endpoints')
            .select((eb) => eb.fn.countAll<number | bigint | string>().as('count'))
            .where('source', '=', 'api')
            .compile(),
        );
        if (Number(rows[0].count) >= maxApiEndpoints) throw new EndpointLimitError(maxApiEndpoints);
        const now = clock.now();
        try {
          const inserted = await tx.execute(
            db
              .insertInto('webhook_endpoints')
              .values({
                id: endpoint.id,
                url: endpoint.url,
                description: endpoint.description,
                source: 'api',
                disabled: sql.lit(endpoint.disabled),
                secrets,
                event_types: JSON.stringify(endpoint.eventTypes ?? DEFAULT_EVENT_TYPES),
                created_at: now,
                updated_at: now,
              })
              .returning(columns(this.clock))
              .compile(),
          );
          return toEndpoint(inserted.rows[0]);
        } catch (error) {
          if (isUniqueViolation(error)) throw new EndpointUrlTakenError(endpoint.url);
          throw error;
        }
      },
      endpoint.disabled ? LOCKED : LOCKED_AND_DRAINED,
    );
  }

  async list(limit: number, after?: string): Promise<Endpoint[]> {
    const query = this.db
      .selectFrom('webhook_endpoints')
      .select(columns(this.clock))
      .$if(after !== undefined, (qb) => qb.where('id', '>', after!))
      .orderBy('id')
      .limit(limit)
      .compile();
    const { rows } = await this.database.execute('read the webhook endpoints', query);
    return rows.map(toEndpoint);
  }

  async get(id: string): Promise<Endpoint | undefined> {
    const query = this.db.selectFrom('webhook_endpoints').select(columns(this.clock)).where('id', '=', id).compile();
    const { rows } = await this.database.execute('read a webhook endpoint', query);
    return rows.length === 0 ? undefined : toEndpoint(rows[0]);
  }

  update(id: string, changes: EndpointChanges): Promise<Endpoint | undefined> {
    const { url, description, disabled, eventTypes } = changes;
    const query = this.db
      .updateTable('webhook_endpoints')
      .set({
        // The builder leaves out a column set to undefined: what is not given stays.
        url,
        description,
        disabled: disabled === undefined ? undefined : sql.lit(disabled),
        event_types: eventTypes && JSON.stringify(eventTypes),
        updated_at: this.clock.now(),
        // A re-enabled endpoint starts afresh: no reason, no backoff, no failures or signals counted.
        ...(disabled === false
          ? {
              disabled_reason: null,
              failures: 0,
              failing_since: null,
              paused_until: null,
              signals: 0,
              throttled: sql.lit(false),
              backoffs: 0,
              in_flight_cap: null,
            }
          : {}),
      })
      .where('id', '=', id)
      .returning(columns(this.clock))
      .compile();
    return this.database.transaction(
      'update an endpoint',
      async (tx) => {
        try {
          const { rows } = await tx.execute(query);
          return rows.length === 0 ? undefined : toEndpoint(rows[0]);
        } catch (error) {
          if (url !== undefined && isUniqueViolation(error)) throw new EndpointUrlTakenError(url);
          throw error;
        }
      },
      // Enabling it, or subscribing it to more: the creates that commit after this owe it their events.
      disabled === false || eventTypes !== undefined ? OUTBOX_WRITES_DRAINED : {},
    );
  }

  delete(id: string): Promise<boolean> {
    return this.database.transaction('delete an endpoint', (tx) => this.remove(tx, id), OUTBOX_WRITES_DRAINED);
  }

  async secrets(id: string): Promise<readonly SigningSecret[] | undefined> {
    const query = this.db.selectFrom('webhook_endpoints').select(['secrets', 'source']).where('id', '=', id).compile();
    const { rows } = await this.database.execute('read an endpoint secret', query);
    return rows.length === 0 ? undefined : this.secretsColumn.read(rows[0].secrets, id, rows[0].source);
  }

  updateSecrets(id: string, change: (secrets: readonly SigningSecret[]) => SigningSecret[]): Promise<boolean> {
    const { db, clock, secretsColumn } = this;
    return this.database.transaction('rotate a secret', async (tx) => {
      const { rows } = await tx.execute(
        db.selectFrom('webhook_endpoints').select(['secrets', 'source']).where('id', '=', id).forUpdate().compile(),
      );
      if (rows.length === 0) return false;
      let current: SigningSecret[];
      try {
        current = secretsColumn.read(rows[0].secrets, id, rows[0].source);
      } catch (error) {
        // A value that does not open in this row (altered, or copied from another) signs nothing: a
        // rotation replaces it. One whose key is missing stays, for the operator to give the key.
        if (!(error instanceof SecretsKeyError) || error.keyMissing) throw error;
        current = [];
      }
      const secrets = secretsColumn.write(change(current), id);
      await tx.execute(
        db.updateTable('webhook_endpoints').set({ secrets, updated_at: clock.now() }).where('id', '=', id).compile(),
      );
      return true;
    });
  }

  reconcile(urls: readonly string[], newId: () => string): Promise<{ added: number; removed: number }> {
    const { db, clock } = this;
    return this.database.transaction(
      'reconcile the endpoints of WEBHOOK_URLS',
      async (tx) => {
        // Every row this may change or remove, locked first, in id order: the lock order of the
        // dispatcher's record (endpoints before deliveries), so the removals wait on nothing that waits on them.
        const { rows: known } = await tx.execute(
          db
            .selectFrom('webhook_endpoints')
            .select(['id', 'url', 'source'])
            .where((eb) =>
              eb.or([eb('source', '=', 'config'), ...(urls.length === 0 ? [] : [eb('url', 'in', [...urls])])]),
            )
            .orderBy('id')
            .forUpdate()
            .compile(),
        );
        let added = 0;
        for (const url of urls) {
          if (!known.some((row) => row.url === url)) added++;
          const now = clock.now();
          // A config endpoint that stays keeps its `disabled` (an operator's pause, or the service's);
          // an api endpoint that the configuration now declares becomes config, enabled.
          await tx.execute(
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
                      .else(sql.lit(false))
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
          if (await this.remove(tx, row.id)) removed++;
        }
        return { added, removed };
      },
      LOCKED_AND_DRAINED,
    );
  }

  async reseal(): Promise<number> {
    const { db, secretsColumn } = this;
    const { changed, recorded } = await this.database.transaction(
      'seal the endpoint secrets',
      async (tx) => {
        // Under `LOCKED`: an instance starting at once sees the record once this one commits.
        const { rows: record } = await tx.execute(db.selectFrom('webhook_secrets_resealed').select('id').compile());
        const unbound = record.length === 0;
        const { rows } = await tx.execute(
          db
            .selectFrom('webhook_endpoints')
            .select(['id', 'secrets', 'source'])
            .orderBy('id') // the lock order
            .forUpdate()
            .compile(),
        );
        let changed = 0;
        for (const { id, secrets, source } of rows) {
          const sealed = secretsColumn.resealed(secrets, id, source, unbound);
          if (sealed === undefined) continue;
          // The same secrets, stored anew: not a change anyone made, so `updated_at` stays.
          await tx.execute(db.updateTable('webhook_endpoints').set({ secrets: sealed }).where('id', '=', id).compile());
          changed++;
        }
        // Every value bound to no endpoint is sealed for its row now (or left held back): from here on
        // such a value was written or copied in later, and never opens. Only with a key, which seals them.
        if (unbound && secretsColumn.seals) {
          await tx.execute(
            db
              .insertInto('webhook_secrets_resealed')
              .values({ id: 1 })
              .onConflict((oc) => oc.doNothing())
              .compile(),
          );
        }
        return { changed, recorded: !unbound || secretsColumn.seals };
      },
      LOCKED,
    );
    if (recorded) secretsColumn.unboundClosed();
    return changed;
  }

  /** Deletes an endpoint, its deliveries and attempts, its row locked first (the lock order); whether it was there. */
  private async remove(tx: Transaction, id: string): Promise<boolean> {
    const { db } = this;
    await tx.execute(db.selectFrom('webhook_endpoints').select('id').where('id', '=', id).forUpdate().compile());
    const deliveries = db.selectFrom('webhook_deliveries').select('id').where('endpoint_id', '=', id);
    await tx.execute(db.deleteFrom('webhook_attempts').where('delivery_id', 'in', deliveries).compile());
    await tx.execute(db.deleteFrom('webhook_deliveries').where('endpoint_id', '=', id).compile());
    const { affectedRows } = await tx.execute(db.deleteFrom('webhook_endpoints').where('id', '=', id).compile());
    return affectedRows === 1;
  }
}

/** The columns of an `Endpoint`, its times in Unix ms. */
const columns = (clock: StoreClock) =>
  [
    'id',
    'url',
    'description',
    'disabled',
    'disabled_reason',
    'source',
    clock.ms('created_at').as('created_at_ms'),
    clock.ms('updated_at').as('updated_at_ms'),
    'event_types',
  ] as const;

type EndpointRow = Selection<Tables, 'webhook_endpoints', ReturnType<typeof columns>[number]>;

function toEndpoint(row: EndpointRow): Endpoint {
  return {
    id: row.id,
    url: row.url,
    description: row.description,
    disabled: flagOf(row.disabled),
    ...(row.disabled_reason === null ? {} : { disabledReason: row.disabled_reason }),
    source: row.source,
    eventTypes: JSON.parse(row.event_types) as string[],
    createdAtMs: msOf(row.created_at_ms),
    updatedAtMs: msOf(row.updated_at_ms),
  };
}
