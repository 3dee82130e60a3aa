import { Injectable } from '@nestjs/common';
import { InferResult, Kysely, sql } from 'kysely';
import { Database } from '../../database/database';
import { Tables } from '../../database/tables';
import {
  AttemptRecord,
  DeliveryPageQuery,
  DeliveryView,
  NewMessage,
  RecoverCursor,
  RecoveredBatch,
  RecoverRange,
} from '../deliveries';
import { webhookBody } from '../webhook-body';
import { DeliveryLog, EndpointDisabledError } from './delivery-log';
import { OutboxStore } from './outbox.store';
import { msOf, StoreClock, storeClock } from './store-clock';
import { flagOf } from './webhooks.tables';

/**
 * The delivery log, written once for both stores. Each write is a `Database.transaction`, so one that
 * finds the SQLite file locked by another process is tried again for a moment before it fails.
 */
@Injectable()
export class SqlDeliveryLog implements DeliveryLog {
  private readonly clock: StoreClock;

  constructor(
    private readonly database: Database,
    private readonly db: Kysely<Tables>,
    private readonly outbox: OutboxStore,
  ) {
    this.clock = storeClock(database);
  }

  async list(endpointId: string, { status, after, limit }: DeliveryPageQuery): Promise<DeliveryView[]> {
    const { rows } = await this.database.execute(
      'list webhook deliveries',
      view(this.db, this.clock)
        .where('d.endpoint_id', '=', endpointId)
        .$if(status !== undefined, (q) => q.where('d.status', '=', status!))
        .$if(after !== undefined, (q) => q.where('d.id', '<', BigInt(after!)))
        .orderBy('d.id', 'desc')
        .limit(limit)
        .compile(),
    );
    return rows.map(toView);
  }

  async get(
    endpointId: string,
    webhookId: string,
  ): Promise<(DeliveryView & { attemptLog: AttemptRecord[] }) | undefined> {
    const [row] = (await this.database.execute('read a webhook delivery', this.one(endpointId, webhookId))).rows;
    if (row === undefined) return undefined;
    const { rows: attempts } = await this.database.execute(
      'read webhook attempts',
      this.db
        .selectFrom('webhook_attempts')
        .select([this.clock.ms('at').as('at_ms'), 'response_status', 'error', 'duration_ms'])
        .where('delivery_id', '=', BigInt(row.seq))
        .orderBy('id')
        .compile(),
    );
    return { ...toView(row), attemptLog: attempts.map(toAttempt) };
  }

  /** The outbox's write for one endpoint, then its delivery as the log shows it, in one transaction. */
  async sendTo(endpointId: string, message: NewMessage): Promise<DeliveryView | undefined> {
    // A disabled endpoint is answered after the transaction ends, nothing written: an error thrown inside
    // it would cost PostgreSQL its pooled connection (a failed transaction's connection is destroyed).
    const sent = await this.database.transaction('send a webhook to one endpoint', async (tx) => {
      const found = await this.outbox.writeTo(tx, endpointId, message);
      if (found !== 'enabled') return found;
      const [row] = (await tx.execute(this.one(endpointId, message.id))).rows;
      return toView(row);
    });
    if (sent === 'disabled') throw new EndpointDisabledError(endpointId);
    return sent === 'none' ? undefined : sent;
  }

  resend(endpointId: string, webhookId: string): Promise<DeliveryView | undefined> {
    const resend = this.db
      .updateTable('webhook_deliveries')
      .set({
        status: 'pending',
        // A delivery out on a send gets a schedule that differs from the one it was claimed with,
        // even within one tick of the clock: its record sees the resend and keeps it pending.
        next_attempt_at: sql<number>`CASE WHEN lease_token IS NULL THEN ${this.clock.now()}
                                          ELSE ${this.clock.dueNowUnlike('next_attempt_at')} END`,
        finished_at: null,
        // The whole schedule again (a record of the send it was out on moves this past that attempt).
        schedule_from: sql<number>`attempts`,
      })
      .where('endpoint_id', '=', endpointId)
      .where('message_id', '=', webhookId)
      .compile();
    return this.database.transaction('resend a webhook delivery', async (tx) => {
      if ((await tx.execute(resend)).affectedRows === 0) return undefined;
      const [row] = (await tx.execute(this.one(endpointId, webhookId))).rows;
      return row && toView(row);
    });
  }

  /**
   * The next failed deliveries by (created_at, id) (the partial index `webhook_deliveries_failed`: a
   * batch reads only its own rows), then one short transaction that makes those still failed pending.
   * Nothing is held between the two: the update checks again what the read found.
   */
  async recoverBatch(
    endpointId: string,
    { sinceMs, untilMs }: RecoverRange,
    limit: number,
    from?: RecoverCursor,
  ): Promise<RecoveredBatch> {
    const { clock } = this;
    const { rows } = await this.database.execute(
      'find failed webhook deliveries to recover',
      this.db
        .selectFrom('webhook_deliveries')
        .select(['id', clock.key(sql.ref('created_at')).as('created_key'), clock.key(clock.now()).as('started_key')])
        .where('endpoint_id', '=', endpointId)
        .where('status', '=', sql.lit('failed'))
        .where('created_at', '>=', clock.at(sinceMs))
        .$if(untilMs !== undefined, (q) => q.where('created_at', '<', clock.at(untilMs!)))
        .$if(from !== undefined, (q) =>
          q.where(sql<boolean>`(created_at, id) > (${clock.fromKey(from!.createdAt)}, ${BigInt(from!.seq)})`),
        )
        .orderBy('created_at')
        .orderBy('id')
        .limit(limit)
        .compile(),
    );
    if (rows.length === 0) return { queued: 0 };
    const startedAt = from?.startedAt ?? String(rows[0].started_key);
    const ids = rows.map((row) => BigInt(row.id));
    const recover = this.db
      .updateTable('webhook_deliveries')
      .set({
        status: 'pending',
        next_attempt_at: clock.now(),
        finished_at: null,
        // The whole schedule again; `attempts` stays the total, as the attempt log shows it.
        schedule_from: sql<number>`attempts`,
      })
      // Its endpoint's row locked before any delivery (PostgreSQL), the lock order of every
      // transaction that writes both (the dispatcher's record, a delete): none waits in a circle.
      .where('endpoint_id', '=', (eb) =>
        eb
          .selectFrom('webhook_endpoints')
          .select('webhook_endpoints.id')
          .where('webhook_endpoints.id', '=', endpointId)
          .forUpdate(),
      )
      .where('id', 'in', ids)
      // Checked again: one brought back meanwhile (and failed again since this recover began) is left alone.
      .where('status', '=', sql.lit('failed'))
      .where((eb) => eb.or([eb('finished_at', 'is', null), eb('finished_at', '<=', clock.fromKey(startedAt))]))
      .compile();
    const queued = await this.database.transaction(
      'recover webhook deliveries',
      async (tx) => (await tx.execute(recover)).affectedRows,
    );
    const last = rows[rows.length - 1];
    return rows.length < limit
      ? { queued }
      : { queued, next: { startedAt, createdAt: String(last.created_key), seq: String(last.id) } };
  }

  private one(endpointId: string, webhookId: string) {
    return view(this.db, this.clock)
      .where('d.endpoint_id', '=', endpointId)
      .where('d.message_id', '=', webhookId)
      .compile();
  }
}

/** Deliveries with their message and last attempt, as the log shows them. */
function view(db: Kysely<Tables>, clock: StoreClock) {
  return db
    .selectFrom('webhook_deliveries as d')
    .innerJoin('webhook_messages as m', 'm.id', 'd.message_id')
    .leftJoin('webhook_attempts as a', (join) =>
      join.on(sql<boolean>`a.id = (SELECT max(id) FROM webhook_attempts WHERE delivery_id = d.id)`),
    )
    .select([
      'd.id as seq',
      'd.message_id',
      'd.endpoint_id',
      'm.event_type',
      'm.payload',
      'm.enveloped',
      clock.ms('m.created_at').as('message_at_ms'),
      'd.status',
      'd.attempts',
      clock.ms('d.created_at').as('created_at_ms'),
      clock.ms('d.next_attempt_at').as('next_attempt_at_ms'),
      sql<number | bigint | null>`${clock.ms('a.at')}`.as('at_ms'),
      'a.response_status',
      'a.error',
      'a.duration_ms',
    ]);
}

type ViewRow = InferResult<ReturnType<typeof view>>[number];

function toAttempt(
  row: Pick<ViewRow, 'response_status' | 'error' | 'duration_ms'> & { at_ms: bigint | number },
): AttemptRecord {
  return {
    atMs: msOf(row.at_ms),
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
    payload: webhookBody({
      eventType: row.event_type,
      data: row.payload,
      enveloped: flagOf(row.enveloped),
      createdAtMs: msOf(row.message_at_ms),
    }),
    status: row.status,
    attempts: Number(row.attempts),
    createdAtMs: msOf(row.created_at_ms),
    ...(row.status === 'pending' ? { nextAttemptAtMs: msOf(row.next_attempt_at_ms) } : {}),
    ...(row.at_ms === null ? {} : { lastAttempt: toAttempt({ ...row, at_ms: row.at_ms }) }),
  };
}
