import { randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import BetterSqlite3 from 'better-sqlite3';
import { SqliteDatabase } from '../../database/sqlite-database';
import { sqliteFailure } from '../../database/sqlite-errors';
import { AttemptResult, Backlog, ClaimedDelivery, DeliveriesStore, NewDelivery } from './deliveries.store';

interface ClaimedRow {
  id: bigint;
  webhook_id: string;
  url: string;
  payload: string;
  attempts: bigint;
  created_at: bigint;
}

const INSERT = `INSERT INTO webhook_deliveries (webhook_id, url, payload, created_at, next_attempt_at)
                VALUES (?, ?, ?, ?, ?)`;
// One statement per connection, prepared on its first use there.
const inserts = new WeakMap<
  BetterSqlite3.Database,
  BetterSqlite3.Statement<[string, string, string, number, number]>
>();

/** Writes deliveries on `connection`, inside the caller's (the plant's) transaction. */
export function insertDeliveriesSqlite(connection: BetterSqlite3.Database, deliveries: readonly NewDelivery[]): void {
  let insert = inserts.get(connection);
  if (insert === undefined) {
    insert = connection.prepare(INSERT);
    inserts.set(connection, insert);
  }
  const now = Date.now();
  for (const delivery of deliveries) insert.run(delivery.webhookId, delivery.url, delivery.payload, now, now);
}

/**
 * The clock of leases: the wall clock when this process started, then the monotonic clock. A wall
 * clock set forward (NTP, an operator) would expire every lease at once, and the dispatcher would
 * claim again what it is sending.
 */
function leaseClock(): number {
  return Math.floor(performance.timeOrigin + performance.now());
}

/**
 * The outbox in the SQLite file, for the dispatcher. Times are Unix milliseconds of this one
 * instance's clock. Rows are written by the plant's transaction (`insertDeliveriesSqlite`, fsynced
 * with the plant); claims and results go through the relaxed connection, not fsynced on their own.
 */
export class SqliteDeliveriesStore extends DeliveriesStore {
  private statements?: ReturnType<typeof prepare>;

  constructor(private readonly database: SqliteDatabase) {
    super();
  }

  async claim(limit: number, leaseMs: number): Promise<ClaimedDelivery[]> {
    const token = randomUUID();
    const leaseNow = leaseClock();
    const rows = this.run((s) => s.claim.all({ now: Date.now(), leaseNow, until: leaseNow + leaseMs, token, limit }));
    return rows.map((row) => ({
      id: row.id.toString(),
      webhookId: row.webhook_id,
      url: row.url,
      payload: row.payload,
      attempts: Number(row.attempts),
      createdAtMs: Number(row.created_at),
      leaseToken: token,
    }));
  }

  async record(results: readonly { delivery: ClaimedDelivery; result: AttemptResult }[]): Promise<number> {
    return this.run((s) => s.recordAll(results));
  }

  async prune(olderThanMs: number, limit: number): Promise<number> {
    return this.run((s) => s.prune.run({ cutoff: Date.now() - olderThanMs, limit }).changes);
  }

  async backlog(): Promise<Backlog> {
    const row = this.run((s) => s.backlog.get()) as { pending: bigint; oldest: bigint | null };
    return row.oldest === null
      ? { pending: Number(row.pending) }
      : { pending: Number(row.pending), oldestCreatedAtMs: Number(row.oldest) };
  }

  private run<T>(work: (statements: ReturnType<typeof prepare>) => T): T {
    try {
      // Claims and results on the relaxed connection: a lost one (power failure) only means a resend.
      this.statements ??= prepare(this.database.relaxedConnection);
      return work(this.statements);
    } catch (error) {
      throw sqliteFailure('SQLite failed to read or update the webhook outbox', error);
    }
  }
}

function prepare(db: BetterSqlite3.Database) {
  const claim = db.prepare<
    [{ now: number; leaseNow: number; until: number; token: string; limit: number }],
    ClaimedRow
  >(
    `UPDATE webhook_deliveries SET locked_until = @until, lease_token = @token
     WHERE id IN (SELECT id FROM webhook_deliveries
                  WHERE status = 'pending' AND next_attempt_at <= @now
                    AND (locked_until IS NULL OR locked_until <= @leaseNow)
                  ORDER BY next_attempt_at LIMIT @limit)
     RETURNING id, webhook_id, url, payload, attempts, created_at`,
  );
  // Each only while the lease is still the one this claim took.
  const where = 'WHERE id = @id AND lease_token = @token';
  const delivered = db.prepare(
    `UPDATE webhook_deliveries SET status = 'delivered', attempts = attempts + 1, finished_at = @now,
       locked_until = NULL, lease_token = NULL, last_error = NULL ${where}`,
  );
  const retry = db.prepare(
    `UPDATE webhook_deliveries SET attempts = attempts + 1, next_attempt_at = @next,
       locked_until = NULL, lease_token = NULL, last_error = @error ${where}`,
  );
  const failed = db.prepare(
    `UPDATE webhook_deliveries SET status = 'failed', attempts = attempts + 1, finished_at = @now,
       locked_until = NULL, lease_token = NULL, last_error = @error ${where}`,
  );
  const released = db.prepare(`UPDATE webhook_deliveries SET locked_until = NULL, lease_token = NULL ${where}`);
  const recordAll = db.transaction((results: readonly { delivery: ClaimedDelivery; result: AttemptResult }[]) => {
    const now = Date.now();
    let recorded = 0;
    for (const { delivery, result } of results) {
      const key = { id: BigInt(delivery.id), token: delivery.leaseToken };
      const run =
        result.kind === 'delivered'
          ? delivered.run({ ...key, now })
          : result.kind === 'retry'
            ? retry.run({ ...key, next: now + result.delayMs, error: result.error })
            : result.kind === 'failed'
              ? failed.run({ ...key, now, error: result.error })
              : released.run(key);
      recorded += run.changes;
    }
    return recorded;
  });
  return {
    claim,
    recordAll: (results: readonly { delivery: ClaimedDelivery; result: AttemptResult }[]) =>
      recordAll.immediate(results),
    prune: db.prepare<[{ cutoff: number; limit: number }]>(
      `DELETE FROM webhook_deliveries WHERE id IN (SELECT id FROM webhook_deliveries
                                                   WHERE status <> 'pending' AND finished_at < @cutoff LIMIT @limit)`,
    ),
    backlog: db.prepare(
      "SELECT count(*) AS pending, min(created_at) AS oldest FROM webhook_deliveries WHERE status = 'pending'",
    ),
  };
}
