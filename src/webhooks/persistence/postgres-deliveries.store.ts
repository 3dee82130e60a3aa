import { randomUUID } from 'node:crypto';
import { PoolClient } from 'pg';
import { PostgresDatabase } from '../../database/postgres-database';
import { AttemptResult, Backlog, ClaimedDelivery, DeliveriesStore, NewDelivery } from './deliveries.store';

interface ClaimedRow {
  id: string;
  webhook_id: string;
  url: string;
  payload: string;
  attempts: number;
  created_at_ms: number;
}

/** Writes deliveries on `client`, inside the caller's (the plant's) transaction: one statement for them all. */
export async function insertDeliveriesPostgres(
  database: PostgresDatabase,
  client: PoolClient,
  deliveries: readonly NewDelivery[],
): Promise<void> {
  await database.timedQuery(
    client,
    `INSERT INTO webhook_deliveries (webhook_id, url, payload)
     SELECT * FROM unnest($1::text[], $2::text[], $3::text[])`,
    [deliveries.map((d) => d.webhookId), deliveries.map((d) => d.url), deliveries.map((d) => d.payload)],
  );
}

/**
 * The outbox in PostgreSQL, shared by every instance. Times come from the server's clock, so
 * instances with skewed clocks still agree on what is due and whose lease has run out. A claim is
 * `FOR UPDATE SKIP LOCKED` (two instances claiming at once take different rows) plus a lease
 * (`locked_until`, `lease_token`) that keeps the row claimed, without a lock, while it is sent.
 */
export class PostgresDeliveriesStore extends DeliveriesStore {
  constructor(private readonly database: PostgresDatabase) {
    super();
  }

  async claim(limit: number, leaseMs: number): Promise<ClaimedDelivery[]> {
    const token = randomUUID();
    const { rows } = await this.database.query<ClaimedRow>(
      'claim webhook deliveries',
      `WITH due AS (
         SELECT id FROM webhook_deliveries
         WHERE status = 'pending' AND next_attempt_at <= clock_timestamp()
           AND (locked_until IS NULL OR locked_until <= clock_timestamp())
         ORDER BY next_attempt_at
         LIMIT $1
         FOR UPDATE SKIP LOCKED)
       UPDATE webhook_deliveries AS d
       SET locked_until = clock_timestamp() + $2 * interval '1 millisecond', lease_token = $3
       FROM due WHERE d.id = due.id
       RETURNING d.id::text AS id, d.webhook_id, d.url, d.payload, d.attempts,
                 (extract(epoch FROM d.created_at) * 1000)::float8 AS created_at_ms`,
      [limit, leaseMs, token],
    );
    return rows.map((row) => ({
      id: row.id,
      webhookId: row.webhook_id,
      url: row.url,
      payload: row.payload,
      attempts: row.attempts,
      createdAtMs: row.created_at_ms,
      leaseToken: token,
    }));
  }

  async record(results: readonly { delivery: ClaimedDelivery; result: AttemptResult }[]): Promise<number> {
    // One statement for the batch; a row is updated only while its lease is still this claim's.
    const { rowCount } = await this.database.query(
      'record webhook attempts',
      `UPDATE webhook_deliveries AS d
       SET status = r.status,
           attempts = d.attempts + r.counted,
           next_attempt_at = CASE WHEN r.delay_ms IS NULL THEN d.next_attempt_at
                                  ELSE clock_timestamp() + r.delay_ms * interval '1 millisecond' END,
           finished_at = CASE WHEN r.status = 'pending' THEN NULL ELSE clock_timestamp() END,
           last_error = CASE WHEN r.counted = 0 THEN d.last_error ELSE r.error END,
           locked_until = NULL,
           lease_token = NULL
       FROM unnest($1::bigint[], $2::uuid[], $3::text[], $4::int[], $5::float8[], $6::text[])
            AS r (id, token, status, counted, delay_ms, error)
       WHERE d.id = r.id AND d.lease_token = r.token`,
      [
        results.map(({ delivery }) => delivery.id),
        results.map(({ delivery }) => delivery.leaseToken),
        results.map(({ result }) =>
          result.kind === 'delivered' ? 'delivered' : result.kind === 'failed' ? 'failed' : 'pending',
        ),
        results.map(({ result }) => (result.kind === 'released' ? 0 : 1)),
        results.map(({ result }) => (result.kind === 'retry' ? result.delayMs : null)),
        results.map(({ result }) => ('error' in result ? result.error : null)),
      ],
    );
    return rowCount ?? 0;
  }

  async prune(olderThanMs: number, limit: number): Promise<number> {
    const { rowCount } = await this.database.query(
      'prune webhook deliveries',
      `DELETE FROM webhook_deliveries WHERE id IN (
         SELECT id FROM webhook_deliveries
         WHERE status <> 'pending' AND finished_at < clock_timestamp() - $1 * interval '1 millisecond'
         LIMIT $2)`,
      [olderThanMs, limit],
    );
    return rowCount ?? 0;
  }

  async backlog(): Promise<Backlog> {
    const { rows } = await this.database.query<{ pending: number; oldest: number | null }>(
      'count pending webhook deliveries',
      `SELECT count(*)::int AS pending, (extract(epoch FROM min(created_at)) * 1000)::float8 AS oldest
       FROM webhook_deliveries WHERE status = 'pending'`,
      [],
    );
    const { pending, oldest } = rows[0];
    return oldest === null ? { pending } : { pending, oldestCreatedAtMs: oldest };
  }
}
