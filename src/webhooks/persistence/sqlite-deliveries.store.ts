import { randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import BetterSqlite3 from 'better-sqlite3';
import { retryWhileBusy, SqliteDatabase } from '../../database/sqlite-database';
import { sqliteFailure } from '../../database/sqlite-errors';
import {
  AttemptRecord,
  Backlog,
  ClaimedDelivery,
  DeliveriesStore,
  DeliveryPageQuery,
  DeliveryStatus,
  DeliveryView,
  EndpointRef,
  NewMessage,
  Recorded,
  RecordedResult,
} from './deliveries.store';
import { SecretsColumn } from './secrets-column';
import { disabledReason, endpointChange } from '../dispatch-policy';

interface DueRow {
  id: bigint;
  message_id: string;
  payload: string;
  trace_context: string | null;
  attempts: bigint;
  created_at: bigint;
  next_attempt_at: bigint;
}

interface ViewRow {
  seq: bigint;
  message_id: string;
  endpoint_id: string;
  event_type: string;
  payload: string;
  status: DeliveryStatus;
  attempts: bigint;
  created_at: bigint;
  next_attempt_at: bigint;
  at: bigint | null;
  response_status: bigint | null;
  error: string | null;
  duration_ms: bigint | null;
}

interface AttemptRow {
  at: bigint;
  response_status: bigint | null;
  error: string | null;
  duration_ms: bigint;
}

// One set of statements per connection, prepared on its first use there.
const writers = new WeakMap<BetterSqlite3.Database, ReturnType<typeof prepareWriter>>();

function prepareWriter(db: BetterSqlite3.Database) {
  return {
    enabled: db.prepare<[], string>('SELECT id FROM webhook_endpoints WHERE disabled = 0').pluck(),
    message: db.prepare<[string, string, string, string | null, number]>(
      'INSERT INTO webhook_messages (id, event_type, payload, trace_context, created_at) VALUES (?, ?, ?, ?, ?)',
    ),
    delivery: db.prepare<[string, string, number, number]>(
      'INSERT INTO webhook_deliveries (message_id, endpoint_id, created_at, next_attempt_at) VALUES (?, ?, ?, ?)',
    ),
  };
}

/**
 * Writes messages on `connection`, inside the caller's (the plants') transaction: each one, and a
 * delivery to every endpoint enabled now. With no enabled endpoint, nothing at all (and the messages
 * are not even made). Returns how many deliveries it wrote.
 */
export function insertMessagesSqlite(
  connection: BetterSqlite3.Database,
  messages: () => readonly NewMessage[],
): number {
  let writer = writers.get(connection);
  if (writer === undefined) {
    writer = prepareWriter(connection);
    writers.set(connection, writer);
  }
  const endpoints = writer.enabled.all();
  if (endpoints.length === 0) return 0;
  const now = Date.now();
  let written = 0;
  for (const message of messages()) {
    writer.message.run(message.id, message.eventType, message.payload, message.traceContext ?? null, now);
    for (const endpoint of endpoints) written += writer.delivery.run(message.id, endpoint, now, now).changes;
  }
  return written;
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
 * The outbox and delivery log in the SQLite file. Times are Unix milliseconds of this one instance's
 * clock. Messages are written by the plants' transaction (`insertMessagesSqlite`, fsynced with the
 * plant); claims and results go through the relaxed connection, not fsynced on their own; resend and
 * recover, which the API answers, through the durable one.
 */
export class SqliteDeliveriesStore extends DeliveriesStore {
  private dispatch?: ReturnType<typeof prepareDispatch>;
  private admin?: ReturnType<typeof prepareAdmin>;

  constructor(
    private readonly database: SqliteDatabase,
    private readonly secretsColumn: SecretsColumn,
  ) {
    super();
  }

  async claim(limit: number, leaseMs: number, endpointCap: number): Promise<ClaimedDelivery[]> {
    const token = randomUUID();
    const leaseNow = leaseClock();
    return this.run((s) =>
      s.claim({ now: Date.now(), leaseNow, until: leaseNow + leaseMs, token, limit, endpointCap }),
    );
  }

  async record(
    results: readonly RecordedResult[],
    disableAfterMs: number,
    retryScheduleMs: readonly number[],
  ): Promise<Recorded> {
    return this.run((s) => s.record(results, disableAfterMs, retryScheduleMs));
  }

  async prune(olderThanMs: number, limit: number): Promise<number> {
    return this.run((s) => s.prune(Date.now() - olderThanMs, limit));
  }

  async backlog(): Promise<Backlog> {
    const row = this.run((s) => s.backlog.get()) as { pending: bigint; oldest: bigint | null };
    return row.oldest === null
      ? { pending: Number(row.pending) }
      : { pending: Number(row.pending), oldestCreatedAtMs: Number(row.oldest) };
  }

  async throttledEndpoints(): Promise<number> {
    return Number(this.run((s) => s.throttled.get()));
  }

  async list(endpointId: string, query: DeliveryPageQuery): Promise<DeliveryView[]> {
    return this.read((s) =>
      s.list
        .all({
          endpointId,
          status: query.status ?? null,
          after: query.after === undefined ? null : BigInt(query.after),
          limit: query.limit,
        })
        .map(toView),
    );
  }

  async get(endpointId: string, webhookId: string) {
    return this.read((s) => {
      const row = s.get.get({ endpointId, webhookId });
      if (row === undefined) return undefined;
      return { ...toView(row), attemptLog: s.attempts.all(row.seq).map(toAttempt) };
    });
  }

  resend(endpointId: string, webhookId: string): Promise<DeliveryView | undefined> {
    return this.write('SQLite failed to resend a delivery', (s) => {
      if (s.resend.run({ endpointId, webhookId, now: Date.now() }).changes === 0) return undefined;
      return toView(s.get.get({ endpointId, webhookId })!);
    });
  }

  recover(endpointId: string, sinceMs: number, untilMs?: number): Promise<number> {
    return this.write(
      'SQLite failed to recover deliveries',
      (s) => s.recover.run({ endpointId, since: sinceMs, until: untilMs ?? null, now: Date.now() }).changes,
    );
  }

  /** The dispatcher's statements, on the relaxed connection: a lost claim or result only means a resend. */
  private run<T>(work: (statements: ReturnType<typeof prepareDispatch>) => T): T {
    try {
      this.dispatch ??= prepareDispatch(this.database.relaxedConnection, this.secretsColumn);
      return work(this.dispatch);
    } catch (error) {
      throw sqliteFailure('SQLite failed to read or update the webhook outbox', error);
    }
  }

  private read<T>(work: (statements: ReturnType<typeof prepareAdmin>) => T): T {
    try {
      this.admin ??= prepareAdmin(this.database.connection);
      return work(this.admin);
    } catch (error) {
      throw sqliteFailure('SQLite failed to read the webhook deliveries', error);
    }
  }

  private write<T>(message: string, work: (statements: ReturnType<typeof prepareAdmin>) => T): Promise<T> {
    return retryWhileBusy(() => {
      try {
        this.admin ??= prepareAdmin(this.database.connection);
        return work(this.admin);
      } catch (error) {
        throw sqliteFailure(message, error);
      }
    });
  }
}

const VIEW = `SELECT d.id AS seq, d.message_id, d.endpoint_id, m.event_type, m.payload, d.status, d.attempts,
                     d.created_at, d.next_attempt_at, a.at, a.response_status, a.error, a.duration_ms
              FROM webhook_deliveries d
              JOIN webhook_messages m ON m.id = d.message_id
              LEFT JOIN webhook_attempts a ON a.id = (SELECT max(id) FROM webhook_attempts WHERE delivery_id = d.id)`;

function prepareAdmin(db: BetterSqlite3.Database) {
  return {
    list: db.prepare<[{ endpointId: string; status: string | null; after: bigint | null; limit: number }], ViewRow>(
      `${VIEW} WHERE d.endpoint_id = @endpointId AND (@status IS NULL OR d.status = @status)
                 AND (@after IS NULL OR d.id < @after)
       ORDER BY d.id DESC LIMIT @limit`,
    ),
    get: db.prepare<[{ endpointId: string; webhookId: string }], ViewRow>(
      `${VIEW} WHERE d.endpoint_id = @endpointId AND d.message_id = @webhookId`,
    ),
    attempts: db.prepare<[bigint], AttemptRow>(
      'SELECT at, response_status, error, duration_ms FROM webhook_attempts WHERE delivery_id = ? ORDER BY id',
    ),
    resend: db.prepare(
      `UPDATE webhook_deliveries SET status = 'pending', next_attempt_at = @now, finished_at = NULL
       WHERE endpoint_id = @endpointId AND message_id = @webhookId`,
    ),
    recover: db.prepare(
      `UPDATE webhook_deliveries SET status = 'pending', next_attempt_at = @now, finished_at = NULL
       WHERE endpoint_id = @endpointId AND status = 'failed' AND created_at >= @since
         AND (@until IS NULL OR created_at < @until)`,
    ),
  };
}

function prepareDispatch(db: BetterSqlite3.Database, secretsColumn: SecretsColumn) {
  type Candidate = { id: string; url: string; secrets: string; in_flight_cap: bigint | null };
  const candidates = db.prepare<[number], Candidate>(
    `SELECT id, url, secrets, in_flight_cap FROM webhook_endpoints
     WHERE disabled = 0 AND (paused_until IS NULL OR paused_until <= ?)`,
  );
  const leased = db
    .prepare<[string, number], bigint>(
      'SELECT count(*) FROM webhook_deliveries WHERE endpoint_id = ? AND locked_until > ?',
    )
    .pluck();
  const due = db.prepare<[{ endpointId: string; now: number; leaseNow: number; limit: number }], DueRow>(
    `SELECT d.id, d.message_id, m.payload, m.trace_context, d.attempts, d.created_at, d.next_attempt_at
     FROM webhook_deliveries d JOIN webhook_messages m ON m.id = d.message_id
     WHERE d.endpoint_id = @endpointId AND d.status = 'pending' AND d.next_attempt_at <= @now
       AND (d.locked_until IS NULL OR d.locked_until <= @leaseNow)
     ORDER BY d.next_attempt_at LIMIT @limit`,
  );
  const lease = db.prepare('UPDATE webhook_deliveries SET locked_until = @until, lease_token = @token WHERE id = @id');
  const claim = db.transaction(
    (p: { now: number; leaseNow: number; until: number; token: string; limit: number; endpointCap: number }) => {
      const picked: { row: DueRow; endpoint: Candidate }[] = [];
      for (const endpoint of candidates.all(p.now)) {
        // Its cap across instances: the one the dispatch policy gave it (a throttled endpoint's probe), or the configured one.
        const cap = endpoint.in_flight_cap === null ? p.endpointCap : Number(endpoint.in_flight_cap);
        const room = cap - Number(leased.get(endpoint.id, p.leaseNow));
        if (room <= 0) continue;
        for (const row of due.all({ endpointId: endpoint.id, now: p.now, leaseNow: p.leaseNow, limit: room })) {
          picked.push({ row, endpoint });
        }
      }
      picked.sort((a, b) => Number(a.row.next_attempt_at - b.row.next_attempt_at));
      return picked.slice(0, p.limit).map(({ row, endpoint }): ClaimedDelivery => {
        lease.run({ id: row.id, until: p.until, token: p.token });
        return {
          id: row.id.toString(),
          webhookId: row.message_id,
          endpointId: endpoint.id,
          url: endpoint.url,
          secrets: secretsColumn.read(endpoint.secrets),
          payload: row.payload,
          attempts: Number(row.attempts),
          createdAtMs: Number(row.created_at),
          leaseToken: p.token,
          ...(row.trace_context === null ? {} : { traceContext: row.trace_context }),
        };
      });
    },
  );

  // Each only while the lease is still the one this claim took.
  const where = 'WHERE id = @id AND lease_token = @token';
  const succeeded = db.prepare(
    `UPDATE webhook_deliveries SET status = 'succeeded', attempts = attempts + 1, finished_at = @now,
       locked_until = NULL, lease_token = NULL ${where}`,
  );
  const retry = db.prepare(
    `UPDATE webhook_deliveries SET attempts = attempts + 1, next_attempt_at = @next,
       locked_until = NULL, lease_token = NULL ${where}`,
  );
  const failed = db.prepare(
    `UPDATE webhook_deliveries SET status = 'failed', attempts = attempts + 1, finished_at = @now,
       locked_until = NULL, lease_token = NULL ${where}`,
  );
  const released = db.prepare(`UPDATE webhook_deliveries SET locked_until = NULL, lease_token = NULL ${where}`);
  const attempt = db.prepare(
    `INSERT INTO webhook_attempts (delivery_id, at, response_status, error, duration_ms)
     VALUES (@id, @at, @status, @error, @durationMs)`,
  );
  const healthOf = db.prepare<[string], { url: string; signals: bigint; throttled: bigint; backoffs: bigint }>(
    'SELECT url, signals, throttled, backoffs FROM webhook_endpoints WHERE id = ?',
  );
  // The endpoint's row as the dispatch policy decided it.
  const setHealth = db.prepare(
    `UPDATE webhook_endpoints SET signals = @signals, throttled = @throttled, backoffs = @backoffs, in_flight_cap = @cap,
       failures = CASE WHEN @failing = 1 THEN failures + 1 ELSE 0 END,
       failing_since = CASE WHEN @failing = 1 THEN coalesce(failing_since, @now) END,
       paused_until = CASE WHEN @keepPause = 1 THEN paused_until ELSE @pausedUntil END
     WHERE id = @id`,
  );
  const disableGone = db.prepare<[{ id: string; now: number; reason: string }], EndpointRef>(
    `UPDATE webhook_endpoints SET disabled = 1, disabled_reason = @reason, updated_at = @now
     WHERE id = @id AND disabled = 0 RETURNING id, url`,
  );
  const disable = db.prepare<[{ id: string; now: number; cutoff: number; reason: string }], EndpointRef>(
    `UPDATE webhook_endpoints SET disabled = 1, disabled_reason = @reason, updated_at = @now
     WHERE id = @id AND disabled = 0 AND failing_since IS NOT NULL AND failing_since <= @cutoff
     RETURNING id, url`,
  );
  const failPending = db.prepare(
    `UPDATE webhook_deliveries SET status = 'failed', finished_at = @now, locked_until = NULL, lease_token = NULL
     WHERE endpoint_id = @id AND status = 'pending'`,
  );
  const record = db.transaction(
    (results: readonly RecordedResult[], disableAfterMs: number, retryScheduleMs: readonly number[]): Recorded => {
      const now = Date.now();
      let recorded = 0;
      const byEndpoint = new Map<string, RecordedResult['result'][]>();
      for (const { delivery, result } of results) {
        const key = { id: BigInt(delivery.id), token: delivery.leaseToken };
        const run =
          result.kind === 'succeeded'
            ? succeeded.run({ ...key, now })
            : result.kind === 'retry'
              ? retry.run({ ...key, next: now + result.delayMs })
              : result.kind === 'failed'
                ? failed.run({ ...key, now })
                : released.run(key);
        recorded += run.changes;
        if (result.kind === 'released') continue;
        if (run.changes === 1) {
          const { atMs, responseStatus, error, durationMs } = result.attempt;
          attempt.run({ id: key.id, at: atMs, status: responseStatus ?? null, error: error ?? null, durationMs });
        }
        const ofEndpoint = byEndpoint.get(delivery.endpointId);
        if (ofEndpoint === undefined) byEndpoint.set(delivery.endpointId, [result]);
        else ofEndpoint.push(result);
      }
      const disabled: Recorded['disabled'][number][] = [];
      const throttled: EndpointRef[] = [];
      const recovered: EndpointRef[] = [];
      for (const [id, endpointResults] of byEndpoint) {
        const row = healthOf.get(id);
        if (row === undefined) continue; // deleted meanwhile
        const before = {
          signals: Number(row.signals),
          throttled: row.throttled === 1n,
          backoffs: Number(row.backoffs),
        };
        const change = endpointChange(before, endpointResults, retryScheduleMs);
        if (change === undefined) continue;
        setHealth.run({
          id,
          now,
          signals: change.signals,
          throttled: change.throttled ? 1 : 0,
          backoffs: change.backoffs,
          cap: change.inFlightCap,
          failing: change.failing ? 1 : 0,
          keepPause: change.pause === 'keep' ? 1 : 0,
          pausedUntil: typeof change.pause === 'object' ? now + change.pause.ms : null,
        });
        const disabledNow =
          change.disable === undefined
            ? change.failing
              ? disable.get({ id, now, cutoff: now - disableAfterMs, reason: disabledReason(disableAfterMs) })
              : undefined
            : disableGone.get({ id, now, reason: change.disable });
        if (disabledNow !== undefined) {
          failPending.run({ id, now });
          disabled.push({ ...disabledNow, why: change.disable === undefined ? 'failing' : 'gone' });
        } else if (change.throttled && !before.throttled) {
          throttled.push({ id, url: row.url });
        } else if (!change.throttled && before.throttled) {
          recovered.push({ id, url: row.url });
        }
      }
      return { recorded, disabled, throttled, recovered };
    },
  );

  const finished = db
    .prepare<[{ cutoff: number; limit: number }], bigint>(
      "SELECT id FROM webhook_deliveries WHERE status <> 'pending' AND finished_at < @cutoff LIMIT @limit",
    )
    .pluck();
  const attemptsOf = db.prepare<[bigint]>('DELETE FROM webhook_attempts WHERE delivery_id = ?');
  const deliveryOf = db.prepare<[bigint]>('DELETE FROM webhook_deliveries WHERE id = ?');
  const orphans = db.prepare<[{ cutoff: number; limit: number }]>(
    `DELETE FROM webhook_messages WHERE id IN (
       SELECT m.id FROM webhook_messages m
       WHERE m.created_at < @cutoff AND NOT EXISTS (SELECT 1 FROM webhook_deliveries d WHERE d.message_id = m.id)
       LIMIT @limit)`,
  );
  const prune = db.transaction((cutoff: number, limit: number): number => {
    const ids = finished.all({ cutoff, limit });
    for (const id of ids) {
      attemptsOf.run(id);
      deliveryOf.run(id);
    }
    return ids.length + orphans.run({ cutoff, limit }).changes;
  });

  return {
    claim: (p: Parameters<typeof claim>[0]) => claim.immediate(p),
    record: (results: readonly RecordedResult[], disableAfterMs: number, retryScheduleMs: readonly number[]) =>
      record.immediate(results, disableAfterMs, retryScheduleMs),
    prune: (cutoff: number, limit: number) => prune.immediate(cutoff, limit),
    backlog: db.prepare(
      "SELECT count(*) AS pending, min(created_at) AS oldest FROM webhook_deliveries WHERE status = 'pending'",
    ),
    throttled: db
      .prepare<[], bigint>('SELECT count(*) FROM webhook_endpoints WHERE throttled = 1 AND disabled = 0')
      .pluck(),
  };
}

function toAttempt(row: AttemptRow): AttemptRecord {
  return {
    atMs: Number(row.at),
    ...(row.response_status === null ? {} : { responseStatus: Number(row.response_status) }),
    ...(row.error === null ? {} : { error: row.error }),
    durationMs: Number(row.duration_ms),
  };
}

function toView(row: ViewRow): DeliveryView {
  return {
    seq: row.seq.toString(),
    id: row.message_id,
    endpointId: row.endpoint_id,
    eventType: row.event_type,
    payload: row.payload,
    status: row.status,
    attempts: Number(row.attempts),
    createdAtMs: Number(row.created_at),
    ...(row.status === 'pending' ? { nextAttemptAtMs: Number(row.next_attempt_at) } : {}),
    ...(row.at === null
      ? {}
      : {
          lastAttempt: toAttempt({
            at: row.at,
            response_status: row.response_status,
            error: row.error,
            duration_ms: row.duration_ms!,
          }),
        }),
  };
}
