import { randomUUID } from 'node:crypto';
import { PoolClient } from 'pg';
import { PostgresDatabase } from '../../database/postgres-database';
import { disabledReason, EndpointChange, endpointChange } from '../dispatch-policy';
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

interface ClaimedRow {
  id: string;
  message_id: string;
  endpoint_id: string;
  url: string;
  secrets: string;
  payload: string;
  trace_context: string | null;
  attempts: number;
  created_at_ms: number;
}

interface EndpointHealthRow {
  id: string;
  url: string;
  signals: number;
  throttled: boolean;
  backoffs: number;
  disabled: boolean;
  /** Failing (or failing from now) for the whole WEBHOOK_DISABLE_AFTER window. */
  overdue: boolean;
  /** No failure, pause or cap of its own: a success changes nothing (the common case, not written). */
  at_rest: boolean;
}

interface ViewRow {
  seq: string;
  message_id: string;
  endpoint_id: string;
  event_type: string;
  payload: string;
  status: DeliveryStatus;
  attempts: number;
  created_at_ms: number;
  next_attempt_at_ms: number;
  at_ms: number | null;
  response_status: number | null;
  error: string | null;
  duration_ms: number | null;
}

const ms = (column: string) => `(extract(epoch FROM ${column}) * 1000)::float8`;

/**
 * Writes messages on `client`, inside the caller's (the plants') transaction, in one statement: each
 * one and a delivery to every endpoint enabled now; with no enabled endpoint, nothing at all.
 * Resolves with how many deliveries it wrote.
 */
export async function insertMessagesPostgres(
  database: PostgresDatabase,
  client: PoolClient,
  messages: readonly NewMessage[],
): Promise<number> {
  const { rowCount } = await database.timedQuery(
    client,
    `WITH endpoints AS (SELECT id FROM webhook_endpoints WHERE NOT disabled),
          messages AS (
            INSERT INTO webhook_messages (id, event_type, payload, trace_context)
            SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[]) WHERE EXISTS (SELECT 1 FROM endpoints)
            RETURNING id)
     INSERT INTO webhook_deliveries (message_id, endpoint_id)
     SELECT m.id, e.id FROM messages m CROSS JOIN endpoints e`,
    [
      messages.map((m) => m.id),
      messages.map((m) => m.eventType),
      messages.map((m) => m.payload),
      messages.map((m) => m.traceContext ?? null),
    ],
  );
  return rowCount ?? 0;
}

/**
 * Claims and results commit without waiting for the WAL flush (`synchronous_commit = off`): they are
 * visible to every instance at once, and a PostgreSQL crash can lose only the last moments of them,
 * which sends those deliveries again with the same webhook-id (at least once, as always). The events
 * themselves commit with the plants, durably.
 */
const ASYNCHRONOUS_COMMIT = ['SET LOCAL synchronous_commit TO off'];
/** Claims take turns across instances, so the per-endpoint cap counts every instance's sends. */
const CLAIM_BEGIN = [...ASYNCHRONOUS_COMMIT, "SELECT pg_advisory_xact_lock(hashtext('plant-store:webhook-claim'))"];

const VIEW = `SELECT d.id::text AS seq, d.message_id, d.endpoint_id, m.event_type, m.payload, d.status, d.attempts,
                     ${ms('d.created_at')} AS created_at_ms, ${ms('d.next_attempt_at')} AS next_attempt_at_ms,
                     ${ms('a.at')} AS at_ms, a.response_status, a.error, a.duration_ms
              FROM webhook_deliveries d
              JOIN webhook_messages m ON m.id = d.message_id
              LEFT JOIN webhook_attempts a ON a.id = (SELECT max(id) FROM webhook_attempts WHERE delivery_id = d.id)`;

/**
 * The outbox and delivery log in PostgreSQL, shared by every instance. Times come from the server's
 * clock, so instances with skewed clocks still agree on what is due and whose lease has run out.
 * Claims take turns across instances (a transaction-scoped advisory lock), so the per-endpoint cap
 * counts every instance's sends; each claimed row carries a lease (`locked_until`, `lease_token`)
 * that keeps it claimed, without a lock, while it is sent.
 */
export class PostgresDeliveriesStore extends DeliveriesStore {
  constructor(
    private readonly database: PostgresDatabase,
    private readonly secretsColumn: SecretsColumn,
  ) {
    super();
  }

  async claim(limit: number, leaseMs: number, endpointCap: number): Promise<ClaimedDelivery[]> {
    const token = randomUUID();
    const rows = await this.inTransaction('claim webhook deliveries', CLAIM_BEGIN, async (client) => {
      // Per enabled endpoint that is not paused: its due rows, as many as its room (the cap the
      // dispatch policy gave it, else the configured one, less what is leased now), oldest due
      // first; then the oldest of all.
      const { rows } = await this.database.timedQuery<ClaimedRow>(
        client,
        `WITH due AS (
           SELECT c.id, c.next_attempt_at FROM webhook_endpoints e
           CROSS JOIN LATERAL (
             SELECT d.id, d.next_attempt_at FROM webhook_deliveries d
             WHERE d.endpoint_id = e.id AND d.status = 'pending' AND d.next_attempt_at <= clock_timestamp()
               AND (d.locked_until IS NULL OR d.locked_until <= clock_timestamp())
             ORDER BY d.next_attempt_at
             LIMIT greatest(0, coalesce(e.in_flight_cap, $4)
                               - (SELECT count(*) FROM webhook_deliveries l
                                  WHERE l.endpoint_id = e.id AND l.locked_until > clock_timestamp()))) c
           WHERE NOT e.disabled AND (e.paused_until IS NULL OR e.paused_until <= clock_timestamp())
           ORDER BY c.next_attempt_at
           LIMIT $1)
         UPDATE webhook_deliveries AS d
         SET locked_until = clock_timestamp() + $2 * interval '1 millisecond', lease_token = $3
         FROM due, webhook_endpoints e, webhook_messages m
         WHERE d.id = due.id AND e.id = d.endpoint_id AND m.id = d.message_id
         RETURNING d.id::text AS id, d.message_id, d.endpoint_id, e.url, e.secrets, m.payload, m.trace_context, d.attempts,
                   ${ms('d.created_at')} AS created_at_ms`,
        [limit, leaseMs, token, endpointCap],
      );
      return rows;
    });
    return rows.map((row) => ({
      id: row.id,
      webhookId: row.message_id,
      endpointId: row.endpoint_id,
      url: row.url,
      secrets: this.secretsColumn.read(row.secrets),
      payload: row.payload,
      attempts: row.attempts,
      createdAtMs: row.created_at_ms,
      leaseToken: token,
      ...(row.trace_context === null ? {} : { traceContext: row.trace_context }),
    }));
  }

  async record(
    results: readonly RecordedResult[],
    disableAfterMs: number,
    retryScheduleMs: readonly number[],
  ): Promise<Recorded> {
    const byEndpoint = new Map<string, RecordedResult['result'][]>();
    for (const { delivery, result } of results) {
      if (result.kind === 'released') continue;
      const ofEndpoint = byEndpoint.get(delivery.endpointId);
      if (ofEndpoint === undefined) byEndpoint.set(delivery.endpointId, [result]);
      else ofEndpoint.push(result);
    }
    const ids = [...byEndpoint.keys()].sort();
    return this.inTransaction('record webhook attempts', ASYNCHRONOUS_COMMIT, async (client) => {
      // The deliveries and their attempt rows, each only while its lease is still this claim's.
      const { rows } = await this.database.timedQuery<{ recorded: number }>(
        client,
        `WITH r AS (
           SELECT * FROM unnest($1::bigint[], $2::uuid[], $3::text[], $4::int[], $5::float8[],
                                $6::float8[], $7::int[], $8::text[], $9::int[])
             AS r (id, token, status, counted, delay_ms, at_ms, response_status, error, duration_ms)),
         updated AS (
           UPDATE webhook_deliveries AS d
           SET status = r.status,
               attempts = d.attempts + r.counted,
               next_attempt_at = CASE WHEN r.delay_ms IS NULL THEN d.next_attempt_at
                                      ELSE clock_timestamp() + r.delay_ms * interval '1 millisecond' END,
               finished_at = CASE WHEN r.status = 'pending' THEN NULL ELSE clock_timestamp() END,
               locked_until = NULL,
               lease_token = NULL
           FROM r WHERE d.id = r.id AND d.lease_token = r.token
           RETURNING d.id),
         attempts AS (
           INSERT INTO webhook_attempts (delivery_id, at, response_status, error, duration_ms)
           SELECT r.id, to_timestamp(r.at_ms / 1000.0), r.response_status, r.error, r.duration_ms
           FROM r JOIN updated u ON u.id = r.id WHERE r.counted = 1)
         SELECT count(*)::int AS recorded FROM updated`,
        [
          results.map(({ delivery }) => delivery.id),
          results.map(({ delivery }) => delivery.leaseToken),
          results.map(({ result }) =>
            result.kind === 'succeeded' ? 'succeeded' : result.kind === 'failed' ? 'failed' : 'pending',
          ),
          results.map(({ result }) => (result.kind === 'released' ? 0 : 1)),
          results.map(({ result }) => (result.kind === 'retry' ? result.delayMs : null)),
          results.map(({ result }) => (result.kind === 'released' ? null : result.attempt.atMs)),
          results.map(({ result }) => (result.kind === 'released' ? null : (result.attempt.responseStatus ?? null))),
          results.map(({ result }) => (result.kind === 'released' ? null : (result.attempt.error ?? null))),
          results.map(({ result }) => (result.kind === 'released' ? null : result.attempt.durationMs)),
        ],
      );
      const recorded: Recorded = { recorded: rows[0].recorded, disabled: [], throttled: [], recovered: [] };
      if (ids.length === 0) return recorded;
      return { ...recorded, ...(await this.recordHealth(client, ids, byEndpoint, disableAfterMs, retryScheduleMs)) };
    });
  }

  /**
   * The endpoints' health after their results: their rows locked in id order (so instances recording
   * at once count every signal), the dispatch policy's change computed from them, and written back
   * with the disabling it decided (410 Gone, or failing for `disableAfterMs`) in one statement.
   */
  private async recordHealth(
    client: PoolClient,
    ids: readonly string[],
    byEndpoint: ReadonlyMap<string, readonly RecordedResult['result'][]>,
    disableAfterMs: number,
    retryScheduleMs: readonly number[],
  ): Promise<Omit<Recorded, 'recorded'>> {
    const { rows } = await this.database.timedQuery<EndpointHealthRow>(
      client,
      `SELECT id, url, signals, throttled, backoffs, disabled,
              coalesce(failing_since, clock_timestamp()) <= clock_timestamp() - $2 * interval '1 millisecond' AS overdue,
              (failures = 0 AND failing_since IS NULL AND paused_until IS NULL AND in_flight_cap IS NULL) AS at_rest
       FROM webhook_endpoints WHERE id = ANY($1) ORDER BY id FOR UPDATE`,
      [ids, disableAfterMs],
    );
    const changes: { row: EndpointHealthRow; change: EndpointChange; disable: string | null }[] = [];
    const outcome: { disabled: Recorded['disabled'][number][]; throttled: EndpointRef[]; recovered: EndpointRef[] } = {
      disabled: [],
      throttled: [],
      recovered: [],
    };
    for (const row of rows) {
      const change = endpointChange(row, byEndpoint.get(row.id) ?? [], retryScheduleMs);
      if (change === undefined) continue;
      const why = row.disabled
        ? undefined
        : change.disable !== undefined
          ? 'gone'
          : change.failing && row.overdue
            ? 'failing'
            : undefined;
      const disable = why === 'gone' ? change.disable! : why === 'failing' ? disabledReason(disableAfterMs) : null;
      const unchanged =
        row.at_rest &&
        !change.failing &&
        change.pause === 'clear' &&
        change.inFlightCap === null &&
        change.signals === row.signals &&
        change.throttled === row.throttled &&
        change.backoffs === row.backoffs;
      if (!unchanged) changes.push({ row, change, disable });
      const ref = { id: row.id, url: row.url };
      if (why !== undefined) outcome.disabled.push({ ...ref, why });
      else if (change.throttled && !row.throttled) outcome.throttled.push(ref);
      else if (!change.throttled && row.throttled) outcome.recovered.push(ref);
    }
    if (changes.length === 0) return outcome;
    await this.database.timedQuery(
      client,
      `WITH h AS (
         SELECT * FROM unnest($1::text[], $2::int[], $3::bool[], $4::int[], $5::int[], $6::bool[], $7::bool[],
                              $8::float8[], $9::text[])
           AS h (id, signals, throttled, backoffs, cap, failing, keep_pause, pause_ms, disable)),
       health AS (
         UPDATE webhook_endpoints AS e
         SET signals = h.signals, throttled = h.throttled, backoffs = h.backoffs, in_flight_cap = h.cap,
             failures = CASE WHEN h.failing THEN e.failures + 1 ELSE 0 END,
             failing_since = CASE WHEN h.failing THEN coalesce(e.failing_since, clock_timestamp()) END,
             paused_until = CASE WHEN h.keep_pause THEN e.paused_until
                                 ELSE clock_timestamp() + h.pause_ms * interval '1 millisecond' END,
             disabled = e.disabled OR h.disable IS NOT NULL,
             disabled_reason = coalesce(h.disable, e.disabled_reason),
             updated_at = CASE WHEN h.disable IS NULL THEN e.updated_at ELSE clock_timestamp() END
         FROM h WHERE e.id = h.id)
       UPDATE webhook_deliveries AS d
       SET status = 'failed', finished_at = clock_timestamp(), locked_until = NULL, lease_token = NULL
       FROM h WHERE d.endpoint_id = h.id AND h.disable IS NOT NULL AND d.status = 'pending'`,
      [
        changes.map(({ row }) => row.id),
        changes.map(({ change }) => change.signals),
        changes.map(({ change }) => change.throttled),
        changes.map(({ change }) => change.backoffs),
        changes.map(({ change }) => change.inFlightCap),
        changes.map(({ change }) => change.failing),
        changes.map(({ change }) => change.pause === 'keep'),
        changes.map(({ change }) => (typeof change.pause === 'object' ? change.pause.ms : null)),
        changes.map(({ disable }) => disable),
      ],
    );
    return outcome;
  }

  async prune(olderThanMs: number, limit: number): Promise<number> {
    const { rows } = await this.database.query<{ pruned: number }>(
      'prune webhook deliveries',
      `WITH gone AS (
         DELETE FROM webhook_deliveries WHERE id IN (
           SELECT id FROM webhook_deliveries
           WHERE status <> 'pending' AND finished_at < clock_timestamp() - $1 * interval '1 millisecond'
           LIMIT $2)
         RETURNING id),
       attempts AS (DELETE FROM webhook_attempts WHERE delivery_id IN (SELECT id FROM gone))
       SELECT count(*)::int AS pruned FROM gone`,
      [olderThanMs, limit],
    );
    const { rowCount } = await this.database.query(
      'prune webhook messages',
      `DELETE FROM webhook_messages WHERE id IN (
         SELECT m.id FROM webhook_messages m
         WHERE m.created_at < clock_timestamp() - $1 * interval '1 millisecond'
           AND NOT EXISTS (SELECT 1 FROM webhook_deliveries d WHERE d.message_id = m.id)
         LIMIT $2)`,
      [olderThanMs, limit],
    );
    return rows[0].pruned + (rowCount ?? 0);
  }

  async backlog(): Promise<Backlog> {
    const { rows } = await this.database.query<{ pending: number; oldest: number | null }>(
      'count pending webhook deliveries',
      `SELECT count(*)::int AS pending, ${ms('min(created_at)')} AS oldest
       FROM webhook_deliveries WHERE status = 'pending'`,
      [],
    );
    const { pending, oldest } = rows[0];
    return oldest === null ? { pending } : { pending, oldestCreatedAtMs: oldest };
  }

  async throttledEndpoints(): Promise<number> {
    const { rows } = await this.database.query<{ throttled: number }>(
      'count throttled webhook endpoints',
      'SELECT count(*)::int AS throttled FROM webhook_endpoints WHERE throttled AND NOT disabled',
      [],
    );
    return rows[0].throttled;
  }

  async list(endpointId: string, query: DeliveryPageQuery): Promise<DeliveryView[]> {
    const { rows } = await this.database.query<ViewRow>(
      'list webhook deliveries',
      `${VIEW} WHERE d.endpoint_id = $1 AND ($2::text IS NULL OR d.status = $2) AND ($3::bigint IS NULL OR d.id < $3)
       ORDER BY d.id DESC LIMIT $4`,
      [endpointId, query.status ?? null, query.after ?? null, query.limit],
    );
    return rows.map(toView);
  }

  async get(endpointId: string, webhookId: string) {
    const { rows } = await this.database.query<ViewRow>(
      'read a webhook delivery',
      `${VIEW} WHERE d.endpoint_id = $1 AND d.message_id = $2`,
      [endpointId, webhookId],
    );
    if (rows.length === 0) return undefined;
    const { rows: attempts } = await this.database.query<{
      at_ms: number;
      response_status: number | null;
      error: string | null;
      duration_ms: number;
    }>(
      'read webhook attempts',
      `SELECT ${ms('at')} AS at_ms, response_status, error, duration_ms FROM webhook_attempts
       WHERE delivery_id = $1 ORDER BY id`,
      [rows[0].seq],
    );
    return { ...toView(rows[0]), attemptLog: attempts.map(toAttempt) };
  }

  async resend(endpointId: string, webhookId: string): Promise<DeliveryView | undefined> {
    const { rowCount } = await this.database.query(
      'resend a webhook delivery',
      `UPDATE webhook_deliveries SET status = 'pending', next_attempt_at = clock_timestamp(), finished_at = NULL
       WHERE endpoint_id = $1 AND message_id = $2`,
      [endpointId, webhookId],
    );
    if (rowCount === 0) return undefined;
    const { rows } = await this.database.query<ViewRow>(
      'read a webhook delivery',
      `${VIEW} WHERE d.endpoint_id = $1 AND d.message_id = $2`,
      [endpointId, webhookId],
    );
    return rows[0] && toView(rows[0]);
  }

  async recover(endpointId: string, sinceMs: number, untilMs?: number): Promise<number> {
    const { rowCount } = await this.database.query(
      'recover webhook deliveries',
      `UPDATE webhook_deliveries SET status = 'pending', next_attempt_at = clock_timestamp(), finished_at = NULL
       WHERE endpoint_id = $1 AND status = 'failed' AND created_at >= to_timestamp($2 / 1000.0)
         AND ($3::float8 IS NULL OR created_at < to_timestamp($3 / 1000.0))`,
      [endpointId, sinceMs, untilMs ?? null],
    );
    return rowCount ?? 0;
  }

  private async inTransaction<T>(
    action: string,
    begin: readonly string[],
    work: (client: PoolClient) => Promise<T>,
  ): Promise<T> {
    try {
      return await this.database.transaction(work, { begin });
    } catch (error) {
      throw this.database.translate(error, action);
    }
  }
}

function toAttempt(row: {
  at_ms: number;
  response_status: number | null;
  error: string | null;
  duration_ms: number;
}): AttemptRecord {
  return {
    atMs: Math.round(row.at_ms),
    ...(row.response_status === null ? {} : { responseStatus: row.response_status }),
    ...(row.error === null ? {} : { error: row.error }),
    durationMs: row.duration_ms,
  };
}

function toView(row: ViewRow): DeliveryView {
  return {
    seq: row.seq,
    id: row.message_id,
    endpointId: row.endpoint_id,
    eventType: row.event_type,
    payload: row.payload,
    status: row.status,
    attempts: row.attempts,
    createdAtMs: Math.round(row.created_at_ms),
    ...(row.status === 'pending' ? { nextAttemptAtMs: Math.round(row.next_attempt_at_ms) } : {}),
    ...(row.at_ms === null
      ? {}
      : {
          lastAttempt: toAttempt({
            at_ms: row.at_ms,
            response_status: row.response_status,
            error: row.error,
            duration_ms: row.duration_ms!,
          }),
        }),
  };
}
