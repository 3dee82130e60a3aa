import { ColumnType } from 'kysely';
import { Int64Column } from '../../database/tables';
import { DeliveryStatus } from '../deliveries';

/*
 * The webhook feature's tables, as the query builder sees them (created by `webhooks.migrations.ts`).
 * Both stores hold the same columns but read back different types.
 */

/**
 * A time: Unix ms on SQLite, `timestamptz` on PostgreSQL. The builder takes it as a number: ms on
 * SQLite, or an SQL expression of the server's clock typed as one (`StoreClock`).
 */
export type TimeColumn = ColumnType<number | bigint | Date, number | undefined, number>;
export type NullableTimeColumn = ColumnType<number | bigint | Date | null, number | null | undefined, number | null>;
/** A row id the store assigns (INTEGER PRIMARY KEY, BIGSERIAL): read exact as an `Int64Column` is, never written. */
export type GeneratedInt64Column = ColumnType<bigint | string, undefined, never>;
/**
 * 0/1 on SQLite, a BOOLEAN on PostgreSQL: written as `sql.lit(true)` / `sql.lit(false)`, which both
 * read (better-sqlite3 cannot bind a boolean); read with `flagOf`.
 */
export type FlagColumn = ColumnType<bigint | boolean, boolean | undefined, boolean>;
/** An INTEGER: a bigint read from SQLite (its connections read safe integers), a number from PostgreSQL. */
export type SmallIntColumn = ColumnType<bigint | number, number | undefined, number>;
export type NullableSmallIntColumn = ColumnType<bigint | number | null, number | null | undefined, number | null>;

/** A flag as either store reads it. */
export function flagOf(value: bigint | number | boolean): boolean {
  return value === true || Number(value) === 1;
}

export interface WebhookEndpointsTable {
  /** `ep_…`, time-ordered. */
  id: string;
  url: string;
  description: ColumnType<string, string | undefined, string>;
  source: 'api' | 'config';
  disabled: FlagColumn;
  disabled_reason: string | null;
  /** Sealed by `SecretsColumn`, or `CONFIGURED_SECRETS` for a `config` endpoint. */
  secrets: string;
  created_at: TimeColumn;
  updated_at: TimeColumn;
  /** Failed attempts in a row since the last success. */
  failures: SmallIntColumn;
  failing_since: NullableTimeColumn;
  paused_until: NullableTimeColumn;
  /** The dispatch policy's state (`EndpointChange`): endpoint signals in a row, throttled, pauses in a row. */
  signals: SmallIntColumn;
  throttled: FlagColumn;
  backoffs: SmallIntColumn;
  /** The cap on sends in flight the policy gave it; NULL: the configured WEBHOOK_ENDPOINT_CONCURRENCY. */
  in_flight_cap: NullableSmallIntColumn;
  /** The event types it subscribes to: a JSON array of names (`["plant.created"]` by default). */
  event_types: ColumnType<string, string | undefined, string>;
}

export interface WebhookMessagesTable {
  /** The `webhook-id`: one per event, the same for every endpoint. */
  id: string;
  event_type: string;
  /** The event's data, JSON text (so an int64 stays exact): the whole body of a bare message. */
  payload: string;
  trace_context: string | null;
  /** When the event was written, on the store's clock in whole ms: an envelope's `timestamp`. */
  created_at: TimeColumn;
  /** Sent in the Standard Webhooks envelope around `payload` (`webhookBody`), or bare. */
  enveloped: FlagColumn;
}

export interface WebhookDeliveriesTable {
  id: GeneratedInt64Column;
  message_id: string;
  endpoint_id: string;
  status: ColumnType<DeliveryStatus, DeliveryStatus | undefined, DeliveryStatus>;
  attempts: SmallIntColumn;
  /** `attempts` when its current retry schedule began: 0, or as a resend or recover found it. */
  schedule_from: SmallIntColumn;
  created_at: TimeColumn;
  next_attempt_at: TimeColumn;
  /** The lease: on SQLite a time of the lease clock (see the dispatch queue), on PostgreSQL the server's. */
  locked_until: NullableTimeColumn;
  lease_token: string | null;
  finished_at: NullableTimeColumn;
}

export interface WebhookAttemptsTable {
  id: GeneratedInt64Column;
  delivery_id: Int64Column;
  at: TimeColumn;
  response_status: NullableSmallIntColumn;
  error: string | null;
  duration_ms: SmallIntColumn;
}

/** One row (id 1) once the first reseal of bound secrets is done: values bound to nothing open no more. */
export interface WebhookSecretsResealedTable {
  id: number;
}

declare module '../../database/tables' {
  interface Tables {
    webhook_endpoints: WebhookEndpointsTable;
    webhook_messages: WebhookMessagesTable;
    webhook_deliveries: WebhookDeliveriesTable;
    webhook_attempts: WebhookAttemptsTable;
    webhook_secrets_resealed: WebhookSecretsResealedTable;
  }
}
