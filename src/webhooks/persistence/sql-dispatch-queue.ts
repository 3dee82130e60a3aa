import { randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { Injectable } from '@nestjs/common';
import { CompiledQuery, Kysely, sql } from 'kysely';
import { Database } from '../../database/database';
import { prepareQuery } from '../../database/prepared-query';
import { Tables } from '../../database/tables';
import { Transaction, TransactionOptions } from '../../database/transaction';
import { SigningSecret } from '../endpoints/endpoint';
import { disabledReason, EndpointChange, endpointChange } from '../dispatch-policy';
import { Backlog, ClaimedDelivery, DeliveryStatus, EndpointRef, Recorded, RecordedResult } from './deliveries';
import { DispatchQueue } from './dispatch-queue';
import { SecretsColumn } from './secrets-column';
import { msOf, StoreClock, storeClock } from './store-clock';
import './webhooks.tables';

/**
 * The clock of SQLite's leases: the wall clock when this process started, then the monotonic clock.
 * A wall clock set forward (NTP, an operator) would expire every lease at once, and the dispatcher
 * would claim again what it is sending.
 */
function leaseClock(): number {
  return Math.floor(performance.timeOrigin + performance.now());
}

/**
 * Claims and results are bookkeeping whose loss on a crash is harmless: they commit without waiting
 * for the disk (SQLite's relaxed connection, PostgreSQL's `synchronous_commit = off`), are visible at
 * once, and a crash can lose only the last moments of them, which sends those deliveries again with
 * the same webhook-id (at least once, as always). The events themselves commit with the plants, durably.
 */
const RELAXED: TransactionOptions = { durability: 'relaxed' };
/** PostgreSQL's claims take turns across instances, so the per-endpoint cap counts every instance's sends. */
const CLAIM: TransactionOptions = { durability: 'relaxed', locks: ['plant-store:webhook-claim'] };

/** Where the stores' queues truly differ: how a claim finds and leases its rows, and how results are written. */
interface DialectSteps {
  claim(tx: Transaction, limit: number, leaseMs: number, endpointCap: number): Promise<ClaimedDelivery[]>;
  /** Writes the results' deliveries (and attempt rows); the ids of those whose lease was still the claim's. */
  recordDeliveries(tx: Transaction, results: readonly RecordedResult[]): Promise<Set<string>>;
}

/**
 * The outbox's queue in whichever store `DatabaseModule` chose, every step one transaction of
 * `Database.transaction` (relaxed: see `RELAXED`). Pruning, the backlog, the throttled gauge and the
 * endpoints' health after a record are written once. The claim and the writing of results differ
 * where the stores do, each in its named method:
 *
 * - SQLite (`claimSqlite`, `recordDeliveriesSqlite`): one `BEGIN IMMEDIATE` transaction, so nothing
 *   of this process comes between a read and the write it decides; per endpoint and per row, with
 *   statements compiled once. Times are Unix ms of this instance; leases use the lease clock.
 * - PostgreSQL (`claimPostgres`, `recordDeliveriesPostgres`): one statement per step, shared by every
 *   instance, on the server's clock. A claim takes an advisory lock (`CLAIM`), so the per-endpoint cap
 *   is exact across instances; a record batches its rows with `unnest`.
 *
 * The per-endpoint cap is the dispatch policy's (`endpointChange` writes `in_flight_cap`): the claims
 * only read it, NULL meaning the configured cap. Each claimed row carries a lease (`locked_until`,
 * `lease_token`) that keeps it claimed, without a lock, while it is sent. An endpoint whose secrets
 * no key opens is left out (`SecretsColumn.heldBack`), its rows as they were.
 */
@Injectable()
export class SqlDispatchQueue implements DispatchQueue {
  private readonly clock: StoreClock;
  /** PostgreSQL locks rows; SQLite's writers take turns on the whole file. */
  private readonly locksRows: boolean;
  private readonly steps: DialectSteps;

  constructor(
    private readonly database: Database,
    private readonly db: Kysely<Tables>,
    private readonly secretsColumn: SecretsColumn,
  ) {
    this.clock = storeClock(database);
    this.locksRows = database.choose({ sqlite: () => false, postgres: () => true });
    this.steps = database.choose<DialectSteps>({
      sqlite: () => {
        const statements = sqliteStatements(db);
        return {
          claim: (tx, limit, leaseMs, cap) => this.claimSqlite(tx, statements, limit, leaseMs, cap),
          recordDeliveries: (tx, results) => this.recordDeliveriesSqlite(tx, statements, results),
        };
      },
      postgres: () => {
        const statements = postgresStatements(db);
        return {
          claim: (tx, limit, leaseMs, cap) => this.claimPostgres(tx, statements, limit, leaseMs, cap),
          recordDeliveries: (tx, results) => this.recordDeliveriesPostgres(tx, statements, results),
        };
      },
    });
  }

  claim(limit: number, leaseMs: number, endpointCap: number): Promise<ClaimedDelivery[]> {
    return this.database.transaction(
      'claim webhook deliveries',
      (tx) => this.steps.claim(tx, limit, leaseMs, endpointCap),
      CLAIM,
    );
  }

  /**
   * The endpoints of the results locked first, in id order (`healthQuery`), then the deliveries and
   * their attempt rows (each only while its lease is still this claim's), then the endpoints' health
   * from the results recorded (`healthChanges`). Endpoints before deliveries, as every transaction that
   * writes both takes them (a disable fails its endpoint's pending deliveries; a delete removes them):
   * none waits on another in a circle.
   */
  record(
    results: readonly RecordedResult[],
    disableAfterMs: number,
    retryScheduleMs: readonly number[],
  ): Promise<Recorded> {
    // Released results too: their deliveries are written as well.
    const ids = [...new Set(results.map(({ delivery }) => delivery.endpointId))];
    if (ids.length === 0) return Promise.resolve(NOTHING_RECORDED);
    return this.database.transaction(
      'record webhook attempts',
      async (tx) => {
        const { rows: endpoints } = await tx.execute(this.healthQuery(ids, disableAfterMs));
        const recorded = await this.steps.recordDeliveries(tx, results);
        const { writes, outcome } = this.healthChanges(endpoints, results, recorded, disableAfterMs, retryScheduleMs);
        for (const write of writes) await tx.execute(write);
        return { recorded: recorded.size, ...outcome };
      },
      RELAXED,
    );
  }

  /**
   * The finished rows older than the cutoff, then their attempts, then the rows themselves (only if
   * still finished: a resend in between keeps its delivery), then messages left with none. Each
   * step stands alone, so a crash between two leaves nothing that the next prune does not remove.
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
        // Only of deliveries still finished: one resent since the select keeps its attempt log.
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
      pruned += deleted.affectedRows;
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
            .where((inner) =>
              inner.not(
                inner.exists(
                  inner
                    .selectFrom('webhook_deliveries as d')
                    .select(sql.lit(1).as('one'))
                    .whereRef('d.message_id', '=', 'm.id'),
                ),
              ),
            )
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

  private claimed(
    row: {
      id: bigint | string;
      message_id: string;
      endpoint_id: string;
      url: string;
      secrets: string;
      payload: string;
      trace_context: string | null;
      attempts: bigint | number;
      schedule_from: bigint | number;
      created_at_ms: bigint | number;
      due_at: bigint | number | string;
    },
    secrets: readonly SigningSecret[],
    leaseToken: string,
  ): ClaimedDelivery {
    return {
      id: row.id.toString(),
      webhookId: row.message_id,
      endpointId: row.endpoint_id,
      url: row.url,
      secrets,
      payload: row.payload,
      attempts: Number(row.attempts),
      // Never below 0, should a row be written by hand.
      attemptsOnSchedule: Math.max(0, Number(row.attempts) - Number(row.schedule_from)),
      createdAtMs: msOf(row.created_at_ms),
      leaseToken,
      dueAt: row.due_at.toString(),
      ...(row.trace_context === null ? {} : { traceContext: row.trace_context }),
    };
  }

  /** One statement of the queue's bookkeeping, in a relaxed transaction of its own. */
  private write<Row>(action: string, query: CompiledQuery<Row>) {
    return this.database.transaction(action, (tx) => tx.execute(query), RELAXED);
  }

  // SQLite ------------------------------------------------------------------------------------

  /**
   * SQLite's claim, inside its transaction: per enabled endpoint that is not paused, its room (its
   * cap less what is leased now), then its due rows up to that room; the oldest due of all are leased.
   */
  private async claimSqlite(
    tx: Transaction,
    s: SqliteStatements,
    limit: number,
    leaseMs: number,
    endpointCap: number,
  ): Promise<ClaimedDelivery[]> {
    const run = async <Row>(query: CompiledQuery<Row>) => (await tx.execute(query)).rows;
    const token = randomUUID();
    const now = Date.now();
    const leaseNow = leaseClock();
    const picked: { row: SqliteDueRow; endpoint: SqliteCandidate; secrets: readonly SigningSecret[] }[] = [];
    const unreadable = this.secretsColumn.heldBack();
    for (const endpoint of await run(s.candidates({ now }))) {
      if (unreadable.includes(endpoint.id)) continue;
      // Its cap across instances: the one the dispatch policy gave it (a throttled endpoint's probe), or the configured one.
      const cap = endpoint.in_flight_cap === null ? endpointCap : Number(endpoint.in_flight_cap);
      const room = cap - Number((await run(s.leased({ endpointId: endpoint.id, leaseNow })))[0].leased);
      if (room <= 0) continue;
      const due = await run(s.due({ endpointId: endpoint.id, now, leaseNow, limit: room }));
      if (due.length === 0) continue;
      // Read before anything is leased: an endpoint that cannot be signed for leaves its rows as they are.
      const secrets = this.secretsColumn.forSigning(endpoint.secrets, endpoint.id);
      if (secrets === undefined) continue;
      for (const row of due) picked.push({ row, endpoint, secrets });
    }
    picked.sort((a, b) => Number(BigInt(a.row.next_attempt_at) - BigInt(b.row.next_attempt_at)));
    const claimed: ClaimedDelivery[] = [];
    for (const { row, endpoint, secrets } of picked.slice(0, limit)) {
      await tx.execute(s.lease({ id: BigInt(row.id), until: leaseNow + leaseMs, token }));
      claimed.push(
        this.claimed(
          {
            ...row,
            endpoint_id: endpoint.id,
            url: endpoint.url,
            secrets: endpoint.secrets,
            due_at: row.next_attempt_at,
          },
          secrets,
          token,
        ),
      );
    }
    return claimed;
  }

  /** SQLite's results, inside the record's transaction: each on its own row, with its attempt row. */
  private async recordDeliveriesSqlite(
    tx: Transaction,
    s: SqliteStatements,
    results: readonly RecordedResult[],
  ): Promise<Set<string>> {
    const now = Date.now();
    const recorded = new Set<string>();
    for (const { delivery, result } of results) {
      const key = { id: BigInt(delivery.id), token: delivery.leaseToken };
      const due = Number(delivery.dueAt);
      const changed = (
        await tx.execute(
          result.kind === 'succeeded'
            ? s.finish({ ...key, due, status: 'succeeded', now })
            : result.kind === 'retry'
              ? s.retry({ ...key, due, next: now + result.delayMs })
              : result.kind === 'failed'
                ? s.finish({ ...key, due, status: 'failed', now })
                : s.release(key),
        )
      ).affectedRows;
      if (changed === 0) continue;
      recorded.add(delivery.id);
      if (result.kind === 'released') continue;
      const { atMs, responseStatus, error, durationMs } = result.attempt;
      await tx.execute(
        s.attempt({ id: key.id, at: atMs, status: responseStatus ?? null, error: error ?? null, durationMs }),
      );
    }
    return recorded;
  }

  // PostgreSQL --------------------------------------------------------------------------------

  /**
   * PostgreSQL's claim, in one statement under the claim's advisory lock: per enabled endpoint that
   * is not paused, its due rows, as many as its room (LATERAL), oldest due first; then the oldest of
   * all. Rows another transaction holds (a record, a disable, a delete) are skipped, not waited for:
   * the claim takes no endpoint lock, and so waits on nothing that waits on it. The rows of an
   * endpoint whose secrets no key opens are released again before the commit.
   */
  private async claimPostgres(
    tx: Transaction,
    s: PostgresStatements,
    limit: number,
    leaseMs: number,
    endpointCap: number,
  ): Promise<ClaimedDelivery[]> {
    const token = randomUUID();
    const { rows } = await tx.execute(
      s.claim({ limit, leaseMs, token, endpointCap, unreadable: this.secretsColumn.heldBack() }),
    );
    const secrets = new Map<string, readonly SigningSecret[] | undefined>();
    const claimed: ClaimedDelivery[] = [];
    const unsigned: string[] = [];
    for (const row of rows) {
      if (!secrets.has(row.endpoint_id))
        secrets.set(row.endpoint_id, this.secretsColumn.forSigning(row.secrets, row.endpoint_id));
      const of = secrets.get(row.endpoint_id);
      if (of === undefined) unsigned.push(row.id);
      else claimed.push(this.claimed(row, of, token));
    }
    if (unsigned.length > 0) await tx.execute(s.unlease({ ids: unsigned, token }));
    return claimed;
  }

  /** PostgreSQL's results, inside the record's transaction: every delivery and attempt row in one `unnest` statement. */
  private async recordDeliveriesPostgres(
    tx: Transaction,
    s: PostgresStatements,
    results: readonly RecordedResult[],
  ): Promise<Set<string>> {
    const attempted = (result: RecordedResult['result']) => (result.kind === 'released' ? undefined : result.attempt);
    const { rows } = await tx.execute(
      s.record({
        ids: results.map(({ delivery }) => delivery.id),
        tokens: results.map(({ delivery }) => delivery.leaseToken),
        dues: results.map(({ delivery }) => delivery.dueAt),
        statuses: results.map(({ result }) =>
          result.kind === 'succeeded' ? 'succeeded' : result.kind === 'failed' ? 'failed' : 'pending',
        ),
        counted: results.map(({ result }) => (result.kind === 'released' ? 0 : 1)),
        delays: results.map(({ result }) => (result.kind === 'retry' ? result.delayMs : null)),
        ats: results.map(({ result }) => attempted(result)?.atMs ?? null),
        responseStatuses: results.map(({ result }) => attempted(result)?.responseStatus ?? null),
        errors: results.map(({ result }) => attempted(result)?.error ?? null),
        durations: results.map(({ result }) => attempted(result)?.durationMs ?? null),
      }),
    );
    return new Set(rows.map((row) => row.id));
  }

  // Both stores: the endpoints' health -------------------------------------------------------

  /**
   * The health of the results' endpoints, in id order; on PostgreSQL locked (`FOR UPDATE`), so
   * instances recording at once count every signal, and endpoints are locked before deliveries, as
   * every transaction that writes both takes them: none waits on another in a circle.
   */
  private healthQuery(ids: readonly string[], disableAfterMs: number): CompiledQuery<HealthRow> {
    return this.db
      .selectFrom('webhook_endpoints')
      .select([
        'id',
        'url',
        'signals',
        'throttled',
        'backoffs',
        'disabled',
        sql<
          boolean | bigint
        >`coalesce(failing_since, ${this.clock.now()}) <= ${this.clock.fromNow(-disableAfterMs)}`.as('overdue'),
        sql<boolean | bigint>`(failures = 0 AND failing_since IS NULL AND paused_until IS NULL
                               AND in_flight_cap IS NULL)`.as('at_rest'),
      ])
      .where('id', 'in', ids)
      .orderBy('id')
      .$if(this.locksRows, (q) => q.forUpdate())
      .compile();
  }

  /**
   * What the recorded results do to their endpoints (`endpointChange`, the dispatch policy), from their
   * rows as read by `healthQuery`: the statements that write it back (none for an endpoint at rest that
   * stays so, the common case), with the disabling it decided (410 Gone, or failing for
   * `disableAfterMs`), and what the dispatcher is told. Only recorded results count: a lease that ran
   * out is another's now, and so is what its result says about the endpoint.
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
      const before = { signals: Number(row.signals), throttled: flag(row.throttled), backoffs: Number(row.backoffs) };
      const change = endpointChange(before, results, retryScheduleMs);
      if (change === undefined) continue;
      const why = flag(row.disabled)
        ? undefined
        : change.disable !== undefined
          ? 'gone'
          : change.failing && flag(row.overdue)
            ? 'failing'
            : undefined;
      const disable = why === 'gone' ? change.disable! : why === 'failing' ? disabledReason(disableAfterMs) : undefined;
      const unchanged =
        flag(row.at_rest) &&
        !change.failing &&
        change.pause === 'clear' &&
        change.inFlightCap === null &&
        change.signals === before.signals &&
        change.throttled === before.throttled &&
        change.backoffs === before.backoffs;
      if (!unchanged) writes.push(...this.healthWrites(row.id, change, disable));
      const ref = { id: row.id, url: row.url };
      if (why !== undefined) outcome.disabled.push({ ...ref, why });
      else if (change.throttled && !before.throttled) outcome.throttled.push(ref);
      else if (!change.throttled && before.throttled) outcome.recovered.push(ref);
    }
    return { writes, outcome };
  }

  /** The endpoint's row as the dispatch policy decided it; disabled with `disable`, its pending deliveries failed. */
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

/** An endpoint's health as the record reads it (flags and counts as each store gives them). */
interface HealthRow {
  id: string;
  url: string;
  signals: bigint | number;
  throttled: bigint | boolean;
  backoffs: bigint | number;
  disabled: bigint | boolean;
  /** Failing (or failing from now) for the whole WEBHOOK_DISABLE_AFTER window. */
  overdue: bigint | boolean;
  /** No failure, pause or cap of its own: a success changes nothing (the common case, not written). */
  at_rest: bigint | boolean;
}

const NOTHING_RECORDED: Recorded = { recorded: 0, disabled: [], throttled: [], recovered: [] };

/** A flag as either store reads it: 0/1 (a bigint) on SQLite, a boolean on PostgreSQL. */
function flag(value: bigint | number | boolean): boolean {
  return value === true || Number(value) === 1;
}

interface SqliteCandidate {
  id: string;
  url: string;
  secrets: string;
  in_flight_cap: bigint | number | null;
}

interface SqliteDueRow {
  id: bigint | string;
  message_id: string;
  payload: string;
  trace_context: string | null;
  attempts: bigint | number;
  schedule_from: bigint | number;
  created_at_ms: bigint | number;
  next_attempt_at: bigint | number;
}

type SqliteStatements = ReturnType<typeof sqliteStatements>;

/**
 * SQLite's claim and results, one statement per endpoint or row (their times are Unix ms values;
 * leases on the lease clock). Compiled once each: they run for every claim and every result.
 */
function sqliteStatements(db: Kysely<Tables>) {
  return {
    candidates: prepareQuery<{ now: number }, SqliteCandidate>(({ now }) =>
      db
        .selectFrom('webhook_endpoints')
        .select(['id', 'url', 'secrets', 'in_flight_cap'])
        .where('disabled', '=', sql.lit(false))
        .where((eb) => eb.or([eb('paused_until', 'is', null), eb('paused_until', '<=', now)]))
        .compile(),
    ),
    leased: prepareQuery<{ endpointId: string; leaseNow: number }, { leased: bigint | number }>(
      ({ endpointId, leaseNow }) =>
        db
          .selectFrom('webhook_deliveries')
          .select((eb) => eb.fn.countAll<bigint | number>().as('leased'))
          .where('endpoint_id', '=', endpointId)
          .where('locked_until', '>', leaseNow)
          .compile(),
    ),
    due: prepareQuery<{ endpointId: string; now: number; leaseNow: number; limit: number }, SqliteDueRow>(
      ({ endpointId, now, leaseNow, limit }) =>
        db
          .selectFrom('webhook_deliveries as d')
          .innerJoin('webhook_messages as m', 'm.id', 'd.message_id')
          .select([
            'd.id',
            'd.message_id',
            'm.payload',
            'm.trace_context',
            'd.attempts',
            'd.schedule_from',
            sql<bigint>`d.created_at`.as('created_at_ms'),
            sql<bigint>`d.next_attempt_at`.as('next_attempt_at'),
          ])
          .where('d.endpoint_id', '=', endpointId)
          .where('d.status', '=', sql.lit('pending'))
          .where('d.next_attempt_at', '<=', now)
          .where((eb) => eb.or([eb('d.locked_until', 'is', null), eb('d.locked_until', '<=', leaseNow)]))
          .orderBy('d.next_attempt_at')
          .limit(limit)
          .compile(),
    ),
    lease: prepareQuery<{ id: bigint; until: number; token: string }, never>(({ id, until, token }) =>
      db
        .updateTable('webhook_deliveries')
        .set({ locked_until: until, lease_token: token })
        .where('id', '=', id)
        .compile(),
    ),
    // The results, each only while the lease is still the one this claim took. A delivery whose
    // schedule moved since its claim (`due`) was resent meanwhile: its attempt counts, and it stays
    // pending on the resend's schedule, which begins after this attempt (`schedule_from`).
    finish: prepareQuery<
      { id: bigint; token: string; due: number; status: 'succeeded' | 'failed'; now: number },
      never
    >(({ id, token, due, status, now }) =>
      db
        .updateTable('webhook_deliveries')
        .set(() => ({
          status: sql<DeliveryStatus>`CASE WHEN next_attempt_at = ${due} THEN ${status} ELSE status END`,
          attempts: sql<number>`attempts + 1`,
          schedule_from: sql<number>`CASE WHEN next_attempt_at = ${due} THEN schedule_from ELSE attempts + 1 END`,
          finished_at: sql<number>`CASE WHEN next_attempt_at = ${due} THEN ${now} ELSE finished_at END`,
          locked_until: sql.lit(null),
          lease_token: sql.lit(null),
        }))
        .where('id', '=', id)
        .where('lease_token', '=', token)
        .compile(),
    ),
    retry: prepareQuery<{ id: bigint; token: string; due: number; next: number }, never>(({ id, token, due, next }) =>
      db
        .updateTable('webhook_deliveries')
        .set({
          attempts: sql<number>`attempts + 1`,
          schedule_from: sql<number>`CASE WHEN next_attempt_at = ${due} THEN schedule_from ELSE attempts + 1 END`,
          next_attempt_at: sql<number>`CASE WHEN next_attempt_at = ${due} THEN ${next} ELSE next_attempt_at END`,
          locked_until: sql.lit(null),
          lease_token: sql.lit(null),
        })
        .where('id', '=', id)
        .where('lease_token', '=', token)
        .compile(),
    ),
    release: prepareQuery<{ id: bigint; token: string }, never>(({ id, token }) =>
      db
        .updateTable('webhook_deliveries')
        .set({ locked_until: sql.lit(null), lease_token: sql.lit(null) })
        .where('id', '=', id)
        .where('lease_token', '=', token)
        .compile(),
    ),
    attempt: prepareQuery<
      { id: bigint; at: number; status: number | null; error: string | null; durationMs: number },
      never
    >(({ id, at, status, error, durationMs }) =>
      db
        .insertInto('webhook_attempts')
        .values({ delivery_id: id, at, response_status: status, error, duration_ms: durationMs })
        .compile(),
    ),
  };
}

type PostgresStatements = ReturnType<typeof postgresStatements>;

const ms = (column: string) => sql.raw(`(extract(epoch FROM ${column}) * 1000)::float8`);
/** A delivery's schedule as a claim hands it to its record: whole microseconds, exact (`dueAt`). */
const DUE_AT = sql.raw('(extract(epoch FROM d.next_attempt_at) * 1000000)::bigint::text');
/** In the record: the delivery's schedule is no longer the one it was claimed with (a resend moved it). */
const MOVED = sql.raw('(extract(epoch FROM d.next_attempt_at) * 1000000)::bigint <> r.due_at');

/**
 * PostgreSQL's claim and results: a claim in one statement (LATERAL: each endpoint's room), results
 * batched with `unnest`, all on the server's clock. Compiled once each, and planned for
 * their values each time (never named: see `PrepareOptions.named`): the queue is empty at start-up
 * and holds a backlog under load, and a plan kept from the one would scan the other.
 */
function postgresStatements(db: Kysely<Tables>) {
  return {
    claim: planEachTime<
      { limit: number; leaseMs: number; token: string; endpointCap: number; unreadable: string[] },
      {
        id: string;
        message_id: string;
        endpoint_id: string;
        url: string;
        secrets: string;
        payload: string;
        trace_context: string | null;
        attempts: number;
        schedule_from: number;
        created_at_ms: number;
        due_at: string;
      }
    >(({ limit, leaseMs, token, endpointCap, unreadable }) =>
      sql<never>`WITH due AS (
          SELECT c.id, c.next_attempt_at FROM webhook_endpoints e
          CROSS JOIN LATERAL (
            SELECT d.id, d.next_attempt_at FROM webhook_deliveries d
            WHERE d.endpoint_id = e.id AND d.status = 'pending' AND d.next_attempt_at <= clock_timestamp()
              AND (d.locked_until IS NULL OR d.locked_until <= clock_timestamp())
            ORDER BY d.next_attempt_at
            LIMIT greatest(0, coalesce(e.in_flight_cap, ${endpointCap}::int)
                              - (SELECT count(*) FROM webhook_deliveries l
                                 WHERE l.endpoint_id = e.id AND l.locked_until > clock_timestamp()))
            FOR UPDATE OF d SKIP LOCKED) c
          WHERE NOT e.disabled AND (e.paused_until IS NULL OR e.paused_until <= clock_timestamp())
            AND NOT (e.id = ANY(${unreadable}::text[]))
          ORDER BY c.next_attempt_at
          LIMIT ${limit}::int)
        UPDATE webhook_deliveries AS d
        SET locked_until = clock_timestamp() + ${leaseMs}::float8 * interval '1 millisecond', lease_token = ${token}::uuid
        FROM due, webhook_endpoints e, webhook_messages m
        WHERE d.id = due.id AND e.id = d.endpoint_id AND m.id = d.message_id
          -- Checked again on the row as it is now: a record or a disable that committed while this
          -- statement waited for the row must win (READ COMMITTED re-evaluates only this WHERE).
          AND d.status = 'pending' AND (d.locked_until IS NULL OR d.locked_until <= clock_timestamp())
          AND NOT e.disabled
        RETURNING d.id::text AS id, d.message_id, d.endpoint_id, e.url, e.secrets, m.payload, m.trace_context, d.attempts,
                  ${ms('d.created_at')} AS created_at_ms, ${DUE_AT} AS due_at, d.schedule_from`.compile(db),
    ),
    // Leases this claim took and gives back before its commit: never seen leased, nothing counted.
    unlease: planEachTime<{ ids: string[]; token: string }, never>(({ ids, token }) =>
      sql<never>`UPDATE webhook_deliveries SET locked_until = NULL, lease_token = NULL
        WHERE id = ANY(${ids}::bigint[]) AND lease_token = ${token}::uuid`.compile(db),
    ),
    record: planEachTime<
      {
        ids: string[];
        tokens: string[];
        dues: string[];
        statuses: string[];
        counted: number[];
        delays: (number | null)[];
        ats: (number | null)[];
        responseStatuses: (number | null)[];
        errors: (string | null)[];
        durations: (number | null)[];
      },
      { id: string }
    >((r) =>
      sql<never>`WITH r AS (
          SELECT * FROM unnest(${r.ids}::bigint[], ${r.tokens}::uuid[], ${r.dues}::bigint[], ${r.statuses}::text[],
                               ${r.counted}::int[], ${r.delays}::float8[], ${r.ats}::float8[],
                               ${r.responseStatuses}::int[], ${r.errors}::text[], ${r.durations}::int[])
            AS r (id, token, due_at, status, counted, delay_ms, at_ms, response_status, error, duration_ms)),
        updated AS (
          -- A delivery whose schedule moved since its claim (r.due_at) was resent meanwhile: its
          -- attempt counts, and it stays pending on the resend's schedule, which begins after it.
          UPDATE webhook_deliveries AS d
          SET status = CASE WHEN ${MOVED} THEN d.status ELSE r.status END,
              attempts = d.attempts + r.counted,
              schedule_from = CASE WHEN ${MOVED} THEN d.attempts + r.counted ELSE d.schedule_from END,
              next_attempt_at = CASE WHEN ${MOVED} OR r.delay_ms IS NULL THEN d.next_attempt_at
                                     ELSE clock_timestamp() + r.delay_ms * interval '1 millisecond' END,
              finished_at = CASE WHEN ${MOVED} THEN d.finished_at
                                 WHEN r.status = 'pending' THEN NULL ELSE clock_timestamp() END,
              locked_until = NULL,
              lease_token = NULL
          FROM r WHERE d.id = r.id AND d.lease_token = r.token
          RETURNING d.id),
        attempts AS (
          INSERT INTO webhook_attempts (delivery_id, at, response_status, error, duration_ms)
          SELECT r.id, to_timestamp(r.at_ms / 1000.0), r.response_status, r.error, r.duration_ms
          FROM r JOIN updated u ON u.id = r.id WHERE r.counted = 1)
        SELECT id::text AS id FROM updated`.compile(db),
    ),
  };
}

/** `prepareQuery`, never named: planned for its values each time (see `PrepareOptions.named`). */
function planEachTime<Values extends Record<string, unknown>, Row>(
  build: (values: Values) => CompiledQuery<Row>,
): (values: Values) => CompiledQuery<Row> {
  return prepareQuery(build, { named: false });
}
