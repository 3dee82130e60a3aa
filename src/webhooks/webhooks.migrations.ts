import { Migration } from '../database/migration';

/**
 * The webhook feature's steps of the schema (see `Migration`). One row per event and subscriber:
 * the outbox. `status` with `next_attempt_at` is the queue (never a "highest id sent" cursor: ids
 * are not committed in order); `lease_token` and `locked_until` are the claim of the instance that
 * is sending it. The partial index keeps the poll cheap however many finished rows are kept.
 */
export const WEBHOOK_MIGRATIONS: readonly Migration[] = [
  {
    version: 2,
    name: 'create webhook_deliveries',
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
];
