import { Migration } from '../../database/migration';

/**
 * The webhook feature's steps of the schema (see `Migration` for the names). The first step makes one
 * row per event and subscriber; the second makes the anchors' model: endpoints, one message per event,
 * one delivery per message and endpoint (the outbox's queue), one attempt row per try. `status` with
 * `next_attempt_at` is the queue (never a "highest id sent" cursor: ids are not committed in order);
 * `lease_token` and `locked_until` are the claim of the instance that is sending it. The partial index
 * keeps the poll cheap however many finished rows are kept.
 */
export const WEBHOOK_MIGRATIONS: readonly Migration[] = [
  {
    name: 'webhooks/2026-11-23-01-create-webhook-deliveries',
    legacyVersion: 2,
    // SQLite: times are Unix milliseconds (one instance, one clock).
    sqlite: `CREATE TABLE webhook_deliveries (
               id              INTEGER PRIMARY KEY,
               webhook_id      TEXT NOT NULL,
               url             TEXT NOT NULL,
               payload         TEXT NOT NULL,
               status          TEXT NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'delivered', 'failed')),
               attempts        INTEGER NOT NULL DEFAULT 0,
               created_at      INTEGER NOT NULL,
               next_attempt_at INTEGER NOT NULL,
               locked_until    INTEGER,
               lease_token     TEXT,
               finished_at     INTEGER,
               last_error      TEXT
             ) STRICT;
             CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_attempt_at) WHERE status = 'pending';
             CREATE INDEX webhook_deliveries_finished ON webhook_deliveries (finished_at) WHERE status <> 'pending'`,
    // PostgreSQL: times from the server's clock, shared by every instance.
    postgres: `CREATE TABLE webhook_deliveries (
                 id              BIGSERIAL PRIMARY KEY,
                 webhook_id      TEXT NOT NULL,
                 url             TEXT NOT NULL,
                 payload         TEXT NOT NULL,
                 status          TEXT NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'delivered', 'failed')),
                 attempts        INTEGER NOT NULL DEFAULT 0,
                 created_at      TIMESTAMPTZ NOT NULL DEFAULT clock_timestamp(),
                 next_attempt_at TIMESTAMPTZ NOT NULL DEFAULT clock_timestamp(),
                 locked_until    TIMESTAMPTZ,
                 lease_token     UUID,
                 finished_at     TIMESTAMPTZ,
                 last_error      TEXT
               );
               CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_attempt_at) WHERE status = 'pending';
               CREATE INDEX webhook_deliveries_finished ON webhook_deliveries (finished_at) WHERE status <> 'pending'`,
  },
  {
    name: 'webhooks/2026-11-23-02-endpoints-messages-deliveries-attempts',
    legacyVersion: 3,
    // Rows of the first step are kept: each URL becomes a `config` endpoint (start-up gives it its
    // secrets, or removes it when WEBHOOK_URLS no longer lists it), each row a message (same
    // webhook-id, so a receiver still deduplicates) and its delivery. Times: Unix milliseconds.
    sqlite: `ALTER TABLE webhook_deliveries RENAME TO webhook_deliveries_v2;
             DROP INDEX webhook_deliveries_due;
             DROP INDEX webhook_deliveries_finished;
             CREATE TABLE webhook_endpoints (
               id              TEXT PRIMARY KEY,
               url             TEXT NOT NULL UNIQUE,
               description     TEXT NOT NULL DEFAULT '',
               source          TEXT NOT NULL CHECK (source IN ('api', 'config')),
               disabled        INTEGER NOT NULL DEFAULT 0,
               disabled_reason TEXT,
               secrets         TEXT NOT NULL,
               created_at      INTEGER NOT NULL,
               updated_at      INTEGER NOT NULL,
               failures        INTEGER NOT NULL DEFAULT 0,
               failing_since   INTEGER,
               paused_until    INTEGER
             ) STRICT;
             CREATE TABLE webhook_messages (
               id            TEXT PRIMARY KEY,
               event_type    TEXT NOT NULL,
               payload       TEXT NOT NULL,
               trace_context TEXT,
               created_at    INTEGER NOT NULL
             ) STRICT;
             CREATE TABLE webhook_deliveries (
               id              INTEGER PRIMARY KEY,
               message_id      TEXT NOT NULL,
               endpoint_id     TEXT NOT NULL,
               status          TEXT NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'succeeded', 'failed')),
               attempts        INTEGER NOT NULL DEFAULT 0,
               created_at      INTEGER NOT NULL,
               next_attempt_at INTEGER NOT NULL,
               locked_until    INTEGER,
               lease_token     TEXT,
               finished_at     INTEGER,
               UNIQUE (endpoint_id, message_id)
             ) STRICT;
             CREATE INDEX webhook_deliveries_due ON webhook_deliveries (endpoint_id, next_attempt_at) WHERE status = 'pending';
             CREATE INDEX webhook_deliveries_leased ON webhook_deliveries (endpoint_id) WHERE locked_until IS NOT NULL;
             CREATE INDEX webhook_deliveries_finished ON webhook_deliveries (finished_at) WHERE status <> 'pending';
             CREATE INDEX webhook_deliveries_log ON webhook_deliveries (endpoint_id, id);
             CREATE INDEX webhook_deliveries_message ON webhook_deliveries (message_id);
             CREATE TABLE webhook_attempts (
               id              INTEGER PRIMARY KEY,
               delivery_id     INTEGER NOT NULL,
               at              INTEGER NOT NULL,
               response_status INTEGER,
               error           TEXT,
               duration_ms     INTEGER NOT NULL
             ) STRICT;
             CREATE INDEX webhook_attempts_delivery ON webhook_attempts (delivery_id, id);
             INSERT INTO webhook_endpoints (id, url, source, secrets, created_at, updated_at)
               SELECT 'ep_000000000000' || lower(hex(randomblob(8))), url, 'config', '[]', min(created_at), min(created_at)
               FROM webhook_deliveries_v2 GROUP BY url;
             INSERT INTO webhook_messages (id, event_type, payload, created_at)
               SELECT webhook_id, 'plant.created', payload, created_at FROM webhook_deliveries_v2;
             INSERT INTO webhook_deliveries (message_id, endpoint_id, status, attempts, created_at, next_attempt_at, finished_at)
               SELECT d.webhook_id, e.id, CASE d.status WHEN 'delivered' THEN 'succeeded' ELSE d.status END,
                      d.attempts, d.created_at, d.next_attempt_at, d.finished_at
               FROM webhook_deliveries_v2 d JOIN webhook_endpoints e ON e.url = d.url ORDER BY d.id;
             DROP TABLE webhook_deliveries_v2`,
    // PostgreSQL: times from the server's clock, shared by every instance.
    postgres: `ALTER TABLE webhook_deliveries RENAME TO webhook_deliveries_v2;
               DROP INDEX webhook_deliveries_due;
               DROP INDEX webhook_deliveries_finished;
               CREATE TABLE webhook_endpoints (
                 id              TEXT PRIMARY KEY,
                 url             TEXT NOT NULL UNIQUE,
                 description     TEXT NOT NULL DEFAULT '',
                 source          TEXT NOT NULL CHECK (source IN ('api', 'config')),
                 disabled        BOOLEAN NOT NULL DEFAULT false,
                 disabled_reason TEXT,
                 secrets         TEXT NOT NULL,
                 created_at      TIMESTAMPTZ NOT NULL DEFAULT clock_timestamp(),
                 updated_at      TIMESTAMPTZ NOT NULL DEFAULT clock_timestamp(),
                 failures        INTEGER NOT NULL DEFAULT 0,
                 failing_since   TIMESTAMPTZ,
                 paused_until    TIMESTAMPTZ
               );
               CREATE TABLE webhook_messages (
                 id            TEXT PRIMARY KEY,
                 event_type    TEXT NOT NULL,
                 payload       TEXT NOT NULL,
                 trace_context TEXT,
                 created_at    TIMESTAMPTZ NOT NULL DEFAULT clock_timestamp()
               );
               CREATE TABLE webhook_deliveries (
                 id              BIGSERIAL PRIMARY KEY,
                 message_id      TEXT NOT NULL,
                 endpoint_id     TEXT NOT NULL,
                 status          TEXT NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'succeeded', 'failed')),
                 attempts        INTEGER NOT NULL DEFAULT 0,
                 created_at      TIMESTAMPTZ NOT NULL DEFAULT clock_timestamp(),
                 next_attempt_at TIMESTAMPTZ NOT NULL DEFAULT clock_timestamp(),
                 locked_until    TIMESTAMPTZ,
                 lease_token     UUID,
                 finished_at     TIMESTAMPTZ,
                 UNIQUE (endpoint_id, message_id)
               );
               CREATE INDEX webhook_deliveries_due ON webhook_deliveries (endpoint_id, next_attempt_at) WHERE status = 'pending';
               CREATE INDEX webhook_deliveries_leased ON webhook_deliveries (endpoint_id) WHERE locked_until IS NOT NULL;
               CREATE INDEX webhook_deliveries_finished ON webhook_deliveries (finished_at) WHERE status <> 'pending';
               CREATE INDEX webhook_deliveries_log ON webhook_deliveries (endpoint_id, id);
               CREATE INDEX webhook_deliveries_message ON webhook_deliveries (message_id);
               CREATE TABLE webhook_attempts (
                 id              BIGSERIAL PRIMARY KEY,
                 delivery_id     BIGINT NOT NULL,
                 at              TIMESTAMPTZ NOT NULL,
                 response_status INTEGER,
                 error           TEXT,
                 duration_ms     INTEGER NOT NULL
               );
               CREATE INDEX webhook_attempts_delivery ON webhook_attempts (delivery_id, id);
               INSERT INTO webhook_endpoints (id, url, source, secrets, created_at, updated_at)
                 SELECT 'ep_000000000000' || substr(md5(url), 1, 16), url, 'config', '[]', min(created_at), min(created_at)
                 FROM webhook_deliveries_v2 GROUP BY url;
               INSERT INTO webhook_messages (id, event_type, payload, created_at)
                 SELECT webhook_id, 'plant.created', payload, created_at FROM webhook_deliveries_v2;
               INSERT INTO webhook_deliveries (message_id, endpoint_id, status, attempts, created_at, next_attempt_at, finished_at)
                 SELECT d.webhook_id, e.id, CASE d.status WHEN 'delivered' THEN 'succeeded' ELSE d.status END,
                        d.attempts, d.created_at, d.next_attempt_at, d.finished_at
                 FROM webhook_deliveries_v2 d JOIN webhook_endpoints e ON e.url = d.url ORDER BY d.id;
               DROP TABLE webhook_deliveries_v2`,
  },
  {
    name: 'webhooks/2026-11-25-01-endpoint-signals-and-throttled-state',
    // The dispatch policy's state of each endpoint, shared by every instance: endpoint signals in a
    // row since its last 2xx, whether that throttled it, its pauses in a row since (its backoff), and
    // the cap on sends in flight the policy gave it (NULL: the configured WEBHOOK_ENDPOINT_CONCURRENCY).
    // The claim reads the cap as written.
    sqlite: `ALTER TABLE webhook_endpoints ADD COLUMN signals INTEGER NOT NULL DEFAULT 0;
             ALTER TABLE webhook_endpoints ADD COLUMN throttled INTEGER NOT NULL DEFAULT 0;
             ALTER TABLE webhook_endpoints ADD COLUMN backoffs INTEGER NOT NULL DEFAULT 0;
             ALTER TABLE webhook_endpoints ADD COLUMN in_flight_cap INTEGER`,
    postgres: `ALTER TABLE webhook_endpoints ADD COLUMN signals INTEGER NOT NULL DEFAULT 0;
               ALTER TABLE webhook_endpoints ADD COLUMN throttled BOOLEAN NOT NULL DEFAULT false;
               ALTER TABLE webhook_endpoints ADD COLUMN backoffs INTEGER NOT NULL DEFAULT 0;
               ALTER TABLE webhook_endpoints ADD COLUMN in_flight_cap INTEGER`,
  },
  {
    name: 'webhooks/2026-11-28-01-delivery-schedule-start-and-failed-index',
    // `schedule_from`: the delivery's `attempts` when its current retry schedule began, 0 for a new
    // one; a resend or a recover sets it to `attempts`, so the delivery gets the whole schedule again
    // while `attempts` stays the total of its attempt log. Existing rows start from 0: as before.
    // The partial index is what a recover walks in batches (an endpoint's failed deliveries by
    // creation): each batch reads only its own rows, however many others the endpoint has. IF NOT
    // EXISTS: on a large PostgreSQL table an operator may build it first with CREATE INDEX
    // CONCURRENTLY, so the migration does not hold writes to the table while it builds.
    sqlite: `ALTER TABLE webhook_deliveries ADD COLUMN schedule_from INTEGER NOT NULL DEFAULT 0;
             CREATE INDEX IF NOT EXISTS webhook_deliveries_failed ON webhook_deliveries (endpoint_id, created_at, id) WHERE status = 'failed'`,
    postgres: `ALTER TABLE webhook_deliveries ADD COLUMN schedule_from INTEGER NOT NULL DEFAULT 0;
               CREATE INDEX IF NOT EXISTS webhook_deliveries_failed ON webhook_deliveries (endpoint_id, created_at, id) WHERE status = 'failed'`,
  },
  {
    name: 'webhooks/2026-11-28-02-secrets-resealed-marker',
    // One row once the first start-up of a build that binds secrets to their rows has resealed them
    // all (written in that reseal's transaction). After it, a value in clear or of the first form (bound
    // to no endpoint) is never opened again: it is what someone copied in, and its endpoint is held back.
    sqlite: `CREATE TABLE webhook_secrets_resealed (id INTEGER PRIMARY KEY CHECK (id = 1)) STRICT`,
    postgres: `CREATE TABLE webhook_secrets_resealed (id INTEGER PRIMARY KEY CHECK (id = 1))`,
  },
  {
    name: 'webhooks/2026-11-28-20-endpoint-event-types',
    // The event types each endpoint subscribes to, a JSON array of names (text on both stores; the
    // outbox reads it with `json_each` on SQLite and as `jsonb` on PostgreSQL). Every endpoint there
    // is, `config` ones included, gets the one type there was: it sees no change.
    sqlite: `ALTER TABLE webhook_endpoints ADD COLUMN event_types TEXT NOT NULL DEFAULT '["plant.created"]'`,
    postgres: `ALTER TABLE webhook_endpoints ADD COLUMN event_types TEXT NOT NULL DEFAULT '["plant.created"]'`,
  },
  {
    name: 'webhooks/2026-11-29-01-message-envelope',
    // Whether a message is sent in the Standard Webhooks envelope, its `payload` then the envelope's
    // `data`, and its `created_at` the envelope's `timestamp` (see `webhookBody`). Every message there
    // was sent bare (its payload the whole body): it stays so, retries and resends included.
    sqlite: `ALTER TABLE webhook_messages ADD COLUMN enveloped INTEGER NOT NULL DEFAULT 0`,
    postgres: `ALTER TABLE webhook_messages ADD COLUMN enveloped BOOLEAN NOT NULL DEFAULT false`,
  },
];
