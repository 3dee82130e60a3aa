import { ColumnType, Generated } from 'kysely';

/**
 * A time. SQLite: Unix milliseconds (INTEGER, read as a bigint); PostgreSQL: TIMESTAMPTZ from the
 * server's clock. Queries read it through their store's dialect (milliseconds either way).
 */
export type TimeColumn = ColumnType<bigint | Date, bigint | number | Date, bigint | number | Date>;
/** A flag. SQLite: INTEGER 0 or 1 (read as a bigint); PostgreSQL: BOOLEAN. */
export type FlagColumn = ColumnType<bigint | boolean, number | boolean, number | boolean>;

/** `webhook_endpoints`, as the query builder sees it (created by `webhooks.migrations.ts`). */
export interface WebhookEndpointsTable {
  id: string;
  url: string;
  description: Generated<string>;
  source: 'api' | 'config';
  disabled: ColumnType<bigint | boolean, number | boolean | undefined, number | boolean>;
  disabled_reason: string | null;
  /** Sealed by `SecretsColumn`; never read elsewhere. */
  secrets: string;
  created_at: TimeColumn;
  updated_at: TimeColumn;
  failures: Generated<number | bigint>;
  failing_since: TimeColumn | null;
  paused_until: TimeColumn | null;
  signals: Generated<number | bigint>;
  throttled: ColumnType<bigint | boolean, number | boolean | undefined, number | boolean>;
  backoffs: Generated<number | bigint>;
  in_flight_cap: number | bigint | null;
}

declare module '../../database/tables' {
  interface Tables {
    webhook_endpoints: WebhookEndpointsTable;
  }
}
