import { randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { Injectable } from '@nestjs/common';
import { CompiledQuery, InferResult, Kysely, RawBuilder, sql } from 'kysely';
import { Database } from '../../database/database';
import { Tables } from '../../database/tables';
import { Transaction, TransactionOptions } from '../../database/transaction';
import { SigningSecret } from '../endpoints/endpoint';
import { disabledReason, EndpointChange, endpointChange } from '../dispatch-policy';
import { Backlog, ClaimedDelivery, EndpointRef, Recorded, RecordedResult } from '../deliveries';
import { DispatchQueue } from './dispatch-queue';
import { SecretsColumn, SecretsSource } from '../secrets/secrets-column';
import { msOf, StoreClock, storeClock } from './store-clock';
import { webhookBody } from '../webhook-body';
import { flagOf } from './webhooks.tables';

/**
 * Claims and results commit without waiting for the disk: a crash loses at most their last moments,
 * which sends those deliveries again with the same webhook-id (at least once, as always). The events
 * themselves commit durably, with the plants.
 */
const RELAXED: TransactionOptions = { durability: 'relaxed' };
/** PostgreSQL's claims take turns across instances, so the per-endpoint cap counts every instance's sends. */
const CLAIM: TransactionOptions = { durability: 'relaxed', locks: ['plant-store:webhook-claim'] };

/**
 * The dispatch queue in whichever store `DatabaseModule` chose. The claim and the record differ where
 * the stores do, each in its named method:
 *
 * - SQLite: one `BEGIN IMMEDIATE`, so nothing of this process comes between a read and the write it
 *   decides. Times are Unix ms of this process; leases are on the lease clock.
 * - PostgreSQL: one statement per step, on the server's clock, shared by every instance. Never named
 *   statements (not `fixedText`), so each is planned for its values: the queue swings from empty to a
 *   backlog, and a generic plan made for one scans the other (a 22,000-event backlog drained in 35–40 s
 *   named, 12 s unnamed).
 *
 * A lease (`locked_until`, `lease_token`) keeps a row claimed, without a lock, while it is sent.
 */
@Injectable()
export class SqlDispatchQueue implements DispatchQueue {
  private readonly clock: StoreClock;

  constructor(
    private readonly database: Database,
    private readonly db: Kysely<Tables>,
    private readonly secretsColumn: SecretsColumn,
  ) {
    this.clock = storeClock(database);
  }

  claim(limit: number, leaseMs: number, endpointCap: number): Promise<ClaimedDelivery[]> {
    return this.database.transaction(
      'claim webhook deliveries',
      (tx) =>
        this.database.kind === 'sqlite'
          ? this.claimSqlite(tx, limit, leaseMs, endpointCap)
          : this.claimPostgres(tx, limit, leaseMs, endpointCap),
      CLAIM,
    );
  }

  /**
   * The results' endpoints are locked first (`healthQuery`), then their deliveries written, then the
   * endpoints' health. Endpoints before deliveries, as every transaction that writes both takes them (a
   * disable, a delete, a recover): none waits on another in a circle.
   */
  record(
    results: readonly RecordedResult[],
    disableAfterMs: number,
    retryScheduleMs: readonly number[],
  ): Promise<Recorded> {
    // Released results too: their deliveries are written as well.
    const ids = [...new Set(results.map(({ delivery }) => delivery.endpointId))];
    if (ids.length === 0) return Promise.resolve({ recorded: 0, disabled: [], throttled: [], recovered: [] });
    return this.database.transaction(
      'record webhook attempts',
      async (tx) => {
        const { rows: endpoints } = await tx.execute(healthQuery(this.db, this.clock, ids, disableAfterMs).compile());
        const recorded = await (this.database.kind === 'sqlite'
          ? this.recordSqlite(tx, results)
          : this.recordPostgres(tx, results));
        const { writes, outcome } = this.healthChanges(endpoints, results, recorded, disableAfterMs, retryScheduleMs);
        for (const write of writes) await tx.execute(write);
        return { recorded: recorded.size, ...outcome };
      },
      RELAXED,
    );
  }

  /**
   * The finished rows older than the cutoff, then their attempts, then the rows themselves, then
   * messages left with none; each delete only of rows still finished (a resend in between keeps its
   * delivery and attempt log). Each step stands alone: a crash between two leaves nothing that the
   * next prune does not remove.
   */
  async prune(olderThanMs: number, limit: number): Promise<number> {
    const cutoff = this.clock.fromNow(-olderThanMs);
    const { rows } = await this.database.execute(
      'prune webhook deliveries',
      this.db
        .selectFrom('webhook_deliveries')
        .select('id')
        .where('status', '<>', 'pending')
        .where('finished_at', '<', cutoff)
        .limit(limit)
        .compile(),
    );
    let pruned = 0;
    if (rows.length > 0) {
      const ids = rows.map((row) => BigInt(row.id));
      await this.write(
        'prune webhook attempts',
        this.db
          .deleteFrom('webhook_attempts')
          .where('delivery_id', 'in', (eb) =>
            eb.selectFrom('webhook_deliveries').select('id').where('id', 'in', ids).where('status', '<>', 'pending'),
          )
          .compile(),
      );
      const deleted = await this.write(
        'prune webhook deliveries',
        this.db.deleteFrom('webhook_deliveries').where('id', 'in', ids).where('status', '<>', 'pending').compile(),
      );
      pruned = deleted.affectedRows;
    }
    const orphans = await this.write(
      'prune webhook messages',
      this.db
        .deleteFrom('webhook_messages')
        .where('id', 'in', (eb) =>
          eb
            .selectFrom('webhook_messages as m')
            .select('m.id')
            .where('m.created_at', '<', cutoff)
            .where(sql<boolean>`NOT EXISTS (SELECT 1 FROM webhook_deliveries d WHERE d.message_id = m.id)`)
            .limit(limit),
        )
        .compile(),
    );
    return pruned + orphans.affectedRows;
  }

  async backlog(): Promise<Backlog> {
    const { rows } = await this.database.execute(
      'count pending webhook deliveries',
      this.db
        .selectFrom('webhook_deliveries')
        .select((eb) => [
          eb.fn.countAll<number | bigint | string>().as('pending'),
          sql<number | bigint | null>`${this.clock.ms(sql`min(created_at)`)}`.as('oldest'),
        ])
        .where('status', '=', 'pending')
        .compile(),
    );
    const pending = Number(rows[0].pending);
    const oldest = rows[0].oldest;
    return oldest === null ? { pending } : { pending, oldestCreatedAtMs: msOf(oldest) };
  }

  async throttledEndpoints(): Promise<number> {
    const { rows } = await this.database.execute(
      'count throttled webhook endpoints',
      this.db
        .selectFrom('webhook_endpoints')
        .select((eb) => eb.fn.countAll<number | bigint | string>().as('throttled'))
        .where('throttled', '=', sql.lit(true))
        .where('disabled', '=', sql.lit(false))
        .compile(),
    );
    return Number(rows[0].throttled);
  }

  private claimed(row: ClaimedRow, secrets: readonly SigningSecret[], leaseToken: string): ClaimedDelivery {
    return {
      id: row.id.toString(),
      webhookId: row.message_id,
      endpointId: row.endpoint_id,
      url: row.url,
      secrets,
      payload: webhookBody({
        eventType: row.event_type,
        data: row.payload,
        enveloped: flagOf(row.enveloped),
        createdAtMs: msOf(row.message_at_ms),
      }),
      attempts: Number(row.attempts),
      // Never below 0, should a row be written by hand.
      attemptsOnSchedule: Math.max(0, Number(row.attempts) - Number(row.schedule_from)),
      createdAtMs: msOf(row.created_at_ms),
      leaseToken,
      dueAt: row.due_at.toString(),
      ...(row.trace_context === null ? {} : { traceContext: row.trace_context }),
    };
  }

  private write<Row>(action: string, query: CompiledQuery<Row>) {
    return this.database.transaction(action, (tx) => tx.execute(query), RELAXED);
  }

  /**
   * Per enabled endpoint that is not paused, its room (its cap less what is leased now), then its due
   * rows up to that room; the oldest due of all are leased. An endpoint whose secrets no key opens
   * (`SecretsColumn`) is skipped before anything is leased, its rows as they were.
   */
  private async claimSqlite(
    tx: Transaction,
    limit: number,
    leaseMs: number,
    endpointCap: number,
  ): Promise<ClaimedDelivery[]> {
    const token = randomUUID();
    const now = this.clock.now();
    // The lease clock: the wall clock at start-up, then the monotonic clock. A wall clock set forward
    // would expire every lease at once, and the dispatcher would claim again what it is sending.
    const leaseNow = Math.floor(performance.timeOrigin + performance.now());
    const unreadable = this.secretsColumn.heldBack();
    const { rows: endpoints } = await tx.execute(
      this.db
        .selectFrom('webhook_endpoints as e')
        .select(['e.id', 'e.url', 'e.secrets', 'e.source', room(endpointCap, leaseNow).as('room')])
        .where(sendable(now))
        .compile(),
    );
    const picked: ClaimedDelivery[] = [];
    for (const endpoint of endpoints) {
      if (unreadable.includes(endpoint.id) || endpoint.room <= 0) continue;
      const { rows: due } = await tx.execute(
        this.db
          .selectFrom('webhook_deliveries as d')
          .innerJoin('webhook_messages as m', 'm.id', 'd.message_id')
          .select([
            'd.id',
            'd.message_id',
            'd.endpoint_id',
            'm.event_type',
            'm.payload',
            'm.enveloped',
            sql<bigint>`m.created_at`.as('message_at_ms'),
            'm.trace_context',
            'd.attempts',
            'd.schedule_from',
            sql<bigint>`d.created_at`.as('created_at_ms'),
            sql<bigint>`d.next_attempt_at`.as('due_at'),
          ])
          .where('d.endpoint_id', '=', endpoint.id)
          .where(dueAndFree(now, leaseNow))
          .orderBy('d.next_attempt_at')
          .limit(Number(endpoint.room))
          .compile(),
      );
      if (due.length === 0) continue;
      const secrets = this.secretsColumn.forSigning(endpoint.secrets, endpoint.id, endpoint.source);
      if (secrets === undefined) continue;
      for (const row of due) picked.push(this.claimed({ ...row, url: endpoint.url }, secrets, token));
    }
    const leased = picked.sort((a, b) => Number(BigInt(a.dueAt) - BigInt(b.dueAt))).slice(0, limit);
    if (leased.length === 0) return [];
    // One JSON parameter, so the statement's text (and SQLite's cache of it) is one whatever the count.
    const ids = JSON.stringify(leased.map(({ id }) => id));
    await tx.execute(
      this.db
        .updateTable('webhook_deliveries')
        .set({ locked_until: leaseNow + leaseMs, lease_token: token })
        .where('id', 'in', sql<bigint>`(SELECT CAST(value AS INTEGER) FROM json_each(${ids}))`)
        .compile(),
    );
    return leased;
  }

  /** The attempt rows, then every delivery in one statement, each from one JSON parameter (fixed texts). */
  private async recordSqlite(tx: Transaction, results: readonly RecordedResult[]): Promise<Set<string>> {
    const now = this.clock.now();
    const batch = JSON.stringify(recordedRows(results));
    const resultRows = sql`(SELECT CAST(value ->> 'id' AS INTEGER) AS id, value ->> 'token' AS token,
                     CAST(value ->> 'due' AS INTEGER) AS due_at, value ->> 'status' AS status,
                     value ->> 'counted' AS counted, value ->> 'delayMs' AS delay_ms, value ->> 'atMs' AS at_ms,
                     value ->> 'responseStatus' AS response_status, value ->> 'error' AS error,
                     value ->> 'durationMs' AS duration_ms
              FROM json_each(${batch}))`;
    await tx.execute(
      sql`INSERT INTO webhook_attempts (delivery_id, at, response_status, error, duration_ms)
        SELECT r.id, r.at_ms, r.response_status, r.error, r.duration_ms
        FROM ${resultRows} AS r JOIN webhook_deliveries AS d ON d.id = r.id AND d.lease_token = r.token
        WHERE r.counted = 1`.compile(this.db),
    );
    const { rows } = await tx.execute(
      sql<{ id: bigint }>`UPDATE webhook_deliveries AS d
        SET ${recordedSet(sql.raw('d.next_attempt_at'), now, sql`${now} + r.delay_ms`)}
        FROM ${resultRows} AS r
        WHERE d.id = r.id AND d.lease_token = r.token
        RETURNING id`.compile(this.db),
    );
    return new Set(rows.map((row) => row.id.toString()));
  }

  /**
   * One statement under the claim's advisory lock: per enabled endpoint that is not paused, its due
   * rows up to its room (LATERAL), then the oldest due of all. Rows another transaction holds (a record,
   * a disable, a delete) are skipped, not waited for: the claim takes no endpoint lock, so it waits on
   * nothing that waits on it. Rows of an endpoint whose secrets no key opens are released before the commit.
   */
  private async claimPostgres(
    tx: Transaction,
    limit: number,
    leaseMs: number,
    endpointCap: number,
  ): Promise<ClaimedDelivery[]> {
    const token = randomUUID();
    const unreadable = this.secretsColumn.heldBack();
    const now = this.clock.now();
    const { rows } = await tx.execute(
      sql<ClaimedRow & { secrets: string; source: SecretsSource }>`WITH due AS (
          SELECT c.id, c.next_attempt_at FROM webhook_endpoints e
          CROSS JOIN LATERAL (
            SELECT d.id, d.next_attempt_at FROM webhook_deliveries d
            WHERE d.endpoint_id = e.id AND ${dueAndFree(now, now)}
            ORDER BY d.next_attempt_at
            LIMIT greatest(0, ${room(sql`${endpointCap}::int`, now)})
            FOR UPDATE OF d SKIP LOCKED) c
          WHERE ${sendable(now)} AND NOT (e.id = ANY(${unreadable}::text[]))
          ORDER BY c.next_attempt_at
          LIMIT ${limit}::int)
        UPDATE webhook_deliveries AS d
        SET locked_until = ${this.clock.fromNow(leaseMs)}, lease_token = ${token}::uuid
        FROM due, webhook_endpoints e, webhook_messages m
        WHERE d.id = due.id AND e.id = d.endpoint_id AND m.id = d.message_id
          -- Checked again on the row as it is now: a record or a disable that committed while this
          -- statement waited for the row must win (READ COMMITTED re-evaluates only this WHERE).
          AND d.status = 'pending' AND ${unheld(now)}
          AND NOT e.disabled
        RETURNING d.id::text AS id, d.message_id, d.endpoint_id, e.url, e.secrets, e.source, m.event_type, m.payload, m.enveloped,
                  ${this.clock.ms('m.created_at')} AS message_at_ms, m.trace_context, d.attempts,
                  ${this.clock.ms('d.created_at')} AS created_at_ms, ${PG_DUE}::text AS due_at, d.schedule_from`.compile(
        this.db,
      ),
    );
    const secrets = new Map<string, readonly SigningSecret[] | undefined>();
    const claimed: ClaimedDelivery[] = [];
    const unsigned: string[] = [];
    for (const row of rows) {
      if (!secrets.has(row.endpoint_id))
        secrets.set(row.endpoint_id, this.secretsColumn.forSigning(row.secrets, row.endpoint_id, row.source));
      const of = secrets.get(row.endpoint_id);
      if (of === undefined) unsigned.push(row.id.toString());
      else claimed.push(this.claimed(row, of, token));
    }
    // Leases this claim took and gives back before its commit: never seen leased, nothing counted.
    if (unsigned.length > 0)
      await tx.execute(
        this.db
          .updateTable('webhook_deliveries')
          .set({ locked_until: sql.lit(null), lease_token: sql.lit(null) })
          .where('id', 'in', unsigned)
          .where('lease_token', '=', token)
          .compile(),
      );
    return claimed;
  }

  /** Every delivery and attempt row in one `unnest` statement. */
  private async recordPostgres(tx: Transaction, results: readonly RecordedResult[]): Promise<Set<string>> {
    const r = recordedRows(results);
    const now = this.clock.now();
    const { rows } = await tx.execute(
      sql<{ id: string }>`WITH r AS (
          SELECT * FROM unnest(${r.map((row) => row.id)}::bigint[], ${r.map((row) => row.token)}::uuid[],
                               ${r.map((row) => row.due)}::bigint[], ${r.map((row) => row.status)}::text[],
                               ${r.map((row) => row.counted)}::int[], ${r.map((row) => row.delayMs)}::float8[],
                               ${r.map((row) => row.atMs)}::float8[], ${r.map((row) => row.responseStatus)}::int[],
                               ${r.map((row) => row.error)}::text[], ${r.map((row) => row.durationMs)}::int[])
            AS r (id, token, due_at, status, counted, delay_ms, at_ms, response_status, error, duration_ms)),
        updated AS (
          UPDATE webhook_deliveries AS d
          SET ${recordedSet(PG_DUE, now, sql`${now} + r.delay_ms * interval '1 millisecond'`)}
          FROM r WHERE d.id = r.id AND d.lease_token = r.token
          RETURNING d.id, r.token),
        attempts AS (
          -- Under its own lease only: a stale result of the same delivery in the batch writes no row.
          INSERT INTO webhook_attempts (delivery_id, at, response_status, error, duration_ms)
          SELECT r.id, to_timestamp(r.at_ms / 1000.0), r.response_status, r.error, r.duration_ms
          FROM r JOIN updated u ON u.id = r.id AND u.token = r.token WHERE r.counted = 1)
        SELECT id::text AS id FROM updated`.compile(this.db),
    );
    return new Set(rows.map((row) => row.id));
  }

  /**
   * What the recorded results do to their endpoints (`endpointChange`, the dispatch policy): the writes
   * (none for an endpoint at rest that stays so, the common case), and what the dispatcher is told.
   * Only recorded results count: a lease that ran out is another's now, and so is what its result says.
   */
  private healthChanges(
    rows: readonly HealthRow[],
    results: readonly RecordedResult[],
    recorded: ReadonlySet<string>,
    disableAfterMs: number,
    retryScheduleMs: readonly number[],
  ): { writes: CompiledQuery[]; outcome: Omit<Recorded, 'recorded'> } {
    const byEndpoint = new Map<string, RecordedResult['result'][]>();
    for (const { delivery, result } of results) {
      if (result.kind === 'released' || !recorded.has(delivery.id)) continue;
      const ofEndpoint = byEndpoint.get(delivery.endpointId);
      if (ofEndpoint === undefined) byEndpoint.set(delivery.endpointId, [result]);
      else ofEndpoint.push(result);
    }
    const writes: CompiledQuery[] = [];
    const outcome = {
      disabled: [] as Recorded['disabled'][number][],
      throttled: [] as EndpointRef[],
      recovered: [] as EndpointRef[],
    };
    for (const row of rows) {
      const results = byEndpoint.get(row.id);
      if (results === undefined) continue;
      const before = { signals: Number(row.signals), throttled: flagOf(row.throttled), backoffs: Number(row.backoffs) };
      const change = endpointChange(before, results, retryScheduleMs);
      if (change === undefined) continue;
      const disable = flagOf(row.disabled)
        ? undefined
        : change.disable !== undefined
          ? { why: 'gone' as const, reason: change.disable }
          : change.failing && flagOf(row.overdue)
            ? { why: 'failing' as const, reason: disabledReason(disableAfterMs) }
            : undefined;
      const unchanged =
        disable === undefined &&
        flagOf(row.at_rest) &&
        !change.failing &&
        change.pause === 'clear' &&
        change.inFlightCap === null &&
        change.signals === before.signals &&
        change.throttled === before.throttled &&
        change.backoffs === before.backoffs;
      if (!unchanged) writes.push(...this.healthWrites(row.id, change, disable?.reason));
      const ref = { id: row.id, url: row.url };
      if (disable !== undefined) outcome.disabled.push({ ...ref, why: disable.why });
      else if (change.throttled && !before.throttled) outcome.throttled.push(ref);
      else if (!change.throttled && before.throttled) outcome.recovered.push(ref);
    }
    return { writes, outcome };
  }

  /** The endpoint's row as the policy decided it; disabled with `disable`, its pending deliveries failed. */
  private healthWrites(id: string, change: EndpointChange, disable: string | undefined): CompiledQuery[] {
    const now = this.clock.now();
    const health = this.db
      .updateTable('webhook_endpoints')
      .set({
        signals: change.signals,
        throttled: sql.lit(change.throttled),
        backoffs: change.backoffs,
        in_flight_cap: change.inFlightCap,
        failures: change.failing ? sql<number>`failures + 1` : 0,
        failing_since: change.failing ? sql<number>`coalesce(failing_since, ${now})` : null,
        paused_until:
          change.pause === 'keep'
            ? sql<number>`paused_until`
            : change.pause === 'clear'
              ? null
              : this.clock.fromNow(change.pause.ms),
      })
      .$if(disable !== undefined, (q) => q.set({ disabled: sql.lit(true), disabled_reason: disable!, updated_at: now }))
      .where('id', '=', id)
      .compile();
    if (disable === undefined) return [health];
    const failPending = this.db
      .updateTable('webhook_deliveries')
      .set({ status: sql.lit('failed'), finished_at: now, locked_until: sql.lit(null), lease_token: sql.lit(null) })
      .where('endpoint_id', '=', id)
      .where('status', '=', sql.lit('pending'))
      .compile();
    return [health, failPending];
  }
}

/**
 * The health of the results' endpoints, in id order, locked on PostgreSQL (`FOR UPDATE`; SQLite's
 * builder leaves it out, BEGIN IMMEDIATE holding the file), so instances recording at once count
 * every signal.
 */
function healthQuery(db: Kysely<Tables>, clock: StoreClock, ids: readonly string[], disableAfterMs: number) {
  return db
    .selectFrom('webhook_endpoints')
    .select([
      'id',
      'url',
      'signals',
      'throttled',
      'backoffs',
      'disabled',
      // Failing (or failing from now) for the whole WEBHOOK_DISABLE_AFTER window.
      sql<boolean | bigint>`coalesce(failing_since, ${clock.now()}) <= ${clock.fromNow(-disableAfterMs)}`.as('overdue'),
      // No failure, pause or cap of its own: a success changes nothing, and is not written.
      sql<boolean | bigint>`(failures = 0 AND failing_since IS NULL AND paused_until IS NULL
                             AND in_flight_cap IS NULL)`.as('at_rest'),
    ])
    .where('id', 'in', ids)
    .orderBy('id')
    .forUpdate();
}

type HealthRow = InferResult<ReturnType<typeof healthQuery>>[number];

/*
 * The claim's rules, for both stores' claims: `now` on the store's clock (`StoreClock.now`), `leaseNow`
 * on the lease clock (SQLite's own; the server's on PostgreSQL).
 */
/** The endpoint `e` gets sends: enabled, not paused. */
const sendable = (now: unknown) =>
  sql<boolean>`NOT e.disabled AND (e.paused_until IS NULL OR e.paused_until <= ${now})`;
/** The room of `e`: its cap (the policy's, or the configured `cap`) less what every instance has leased of it. */
const room = (cap: unknown, leaseNow: unknown) =>
  sql<bigint>`coalesce(e.in_flight_cap, ${cap}) - (SELECT count(*) FROM webhook_deliveries l
                                                  WHERE l.endpoint_id = e.id AND l.locked_until > ${leaseNow})`;
/** Nobody holds the delivery `d`: no lease, or one run out. */
const unheld = (leaseNow: unknown) => sql<boolean>`(d.locked_until IS NULL OR d.locked_until <= ${leaseNow})`;
/** The delivery `d` is due and nobody holds it. */
const dueAndFree = (now: unknown, leaseNow: unknown) =>
  sql<boolean>`d.status = 'pending' AND d.next_attempt_at <= ${now} AND ${unheld(leaseNow)}`;

/** A claimed delivery's row: ids, counts and times as each store reads them. */
interface ClaimedRow {
  id: bigint | string;
  message_id: string;
  endpoint_id: string;
  url: string;
  event_type: string;
  payload: string;
  enveloped: bigint | boolean;
  message_at_ms: bigint | number;
  trace_context: string | null;
  attempts: bigint | number;
  schedule_from: bigint | number;
  created_at_ms: bigint | number;
  due_at: bigint | number | string;
}

/** PostgreSQL: a delivery's schedule in whole microseconds, exact: what a claim hands its record (`dueAt`). */
const PG_DUE = sql.raw('(extract(epoch FROM d.next_attempt_at) * 1000000)::bigint');

/**
 * How a record's row `r` writes its delivery `d`. A delivery whose schedule (`due`) moved since its
 * claim was resent meanwhile: its attempt counts, and it stays pending on the resend's schedule, which
 * begins after it.
 */
function recordedSet(due: RawBuilder<unknown>, now: RawBuilder<unknown>, retryAt: RawBuilder<unknown>) {
  const moved = sql`${due} <> r.due_at`;
  return sql`status = CASE WHEN ${moved} THEN d.status ELSE r.status END,
    attempts = d.attempts + r.counted,
    schedule_from = CASE WHEN ${moved} THEN d.attempts + r.counted ELSE d.schedule_from END,
    next_attempt_at = CASE WHEN ${moved} OR r.delay_ms IS NULL THEN d.next_attempt_at ELSE ${retryAt} END,
    finished_at = CASE WHEN ${moved} THEN d.finished_at WHEN r.status = 'pending' THEN NULL ELSE ${now} END,
    locked_until = NULL,
    lease_token = NULL`;
}

/**
 * The results as the record's rows, one shape for both stores (`json_each`, `unnest`): the lease they
 * were claimed under, the status they leave, whether they count as an attempt, a retry's delay, and
 * the attempt's fields (null when released or absent).
 */
function recordedRows(results: readonly RecordedResult[]) {
  return results.map(({ delivery, result }) => {
    const attempt = result.kind === 'released' ? undefined : result.attempt;
    return {
      id: delivery.id,
      token: delivery.leaseToken,
      due: delivery.dueAt,
      status: result.kind === 'succeeded' || result.kind === 'failed' ? result.kind : 'pending',
      counted: attempt === undefined ? 0 : 1,
      delayMs: result.kind === 'retry' ? result.delayMs : null,
      atMs: attempt?.atMs ?? null,
      responseStatus: attempt?.responseStatus ?? null,
      error: attempt?.error ?? null,
      durationMs: attempt?.durationMs ?? null,
    };
  });
}
