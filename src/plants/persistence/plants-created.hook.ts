import BetterSqlite3 from 'better-sqlite3';
import { PoolClient } from 'pg';
import { Plant } from '../plant';

/**
 * What else must commit together with new plants: the webhook outbox, when it is on. The plants
 * adapters call it inside the transaction that inserted the plants (only those it inserted, never a
 * replay), and once more after the commit. Plants knows no more of webhooks than this; the webhooks
 * feature provides it (`OutboxWriter`), and without it nothing else is written.
 */
export abstract class PlantsCreatedHook {
  /** Inside the SQLite write transaction that inserted `plants`, on its connection. */
  abstract inSqlite(connection: BetterSqlite3.Database, plants: readonly Plant[]): void;

  /** Inside the PostgreSQL transaction that inserted `plants`, on its connection. */
  abstract inPostgres(client: PoolClient, plants: readonly Plant[]): Promise<void>;

  /** After that transaction committed. */
  abstract committed(): void;
}
