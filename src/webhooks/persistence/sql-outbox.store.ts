import { Injectable } from '@nestjs/common';
import { Kysely, RawBuilder, sql } from 'kysely';
import { prepareQuery } from '../../database/prepared-query';
import { StatementResult, Transaction, TransactionOptions } from '../../database/transaction';
import { Tables } from '../../database/tables';
import { NewMessage } from './deliveries';
import { OutboxAddition, OutboxStore, RowMessage } from './outbox.store';
import './webhooks.tables';

/**
 * What changing which endpoints get events (creating one enabled, enabling one, the start-up's
 * reconcile, deleting one) takes first on PostgreSQL, with its BEGIN: SHARE on `webhook_messages`
 * conflicts with the ROW EXCLUSIVE that every plants insert takes there at parse time (whether it
 * writes a message or not), before its snapshot. So the change waits for the inserts in flight (which
 * commit before it, and owe a new endpoint nothing), and the inserts after it wait for its commit and
 * see it: none misses an endpoint enabled before it committed, and a delete leaves none of the
 * endpoint's deliveries behind. Inserts never wait on one another for it (ROW EXCLUSIVE does not
 * conflict with itself).
 */
export const OUTBOX_WRITES_DRAINED: TransactionOptions = { holdWritesTo: ['webhook_messages'] };

/**
 * The outbox's write, in the way of each store (the port's two methods; the plants' repository calls
 * the one of its store):
 *
 * - SQLite (`write`): synchronously, inside the group commit's transaction, through its `execute`
 *   (compiled queries, each compiled once): the enabled endpoints, then per message its row and one
 *   delivery per endpoint. Times: Unix ms.
 * - PostgreSQL (`writeWith`): common table expressions of the plants' one insert statement, the
 *   enabled endpoints read inside it (`unnest` for the batch); times from the server's clock (the
 *   columns' defaults).
 */
@Injectable()
export class SqlOutboxStore implements OutboxStore {
  private statements?: ReturnType<typeof sqliteStatements>;

  constructor(private readonly db: Kysely<Tables>) {}

  /** SQLite's write: `execute` returns at once, so the whole write finishes inside the call. */
  write(transaction: Transaction, messages: () => readonly NewMessage[]): number {
    // Compiled once, on the first write.
    const { enabled, message, delivery } = (this.statements ??= sqliteStatements(this.db));
    const run = <Row>(query: Parameters<Transaction['execute']>[0]) =>
      transaction.execute(query) as StatementResult<Row>;
    const endpoints = run<{ id: string; event_types: string }>(enabled({})).rows;
    if (endpoints.length === 0) return 0;
    // Each endpoint gets the messages of the event types it subscribes to, and no other.
    const subscribed = new Map<string, string[]>();
    const subscribedTo = (eventType: string) => {
      let ids = subscribed.get(eventType);
      if (ids === undefined) {
        ids = endpoints
          .filter((endpoint) => (JSON.parse(endpoint.event_types) as string[]).includes(eventType))
          .map((endpoint) => endpoint.id);
        subscribed.set(eventType, ids);
      }
      return ids;
    };
    const now = Date.now();
    let written = 0;
    for (const { id, eventType, payload, traceContext } of messages()) {
      const endpointIds = subscribedTo(eventType);
      if (endpointIds.length === 0) continue;
      run(message({ id, eventType, payload, traceContext: traceContext ?? null, now }));
      for (const endpointId of endpointIds) {
        written += run(delivery({ messageId: id, endpointId, now })).affectedRows;
      }
    }
    return written;
  }

  /**
   * PostgreSQL's part of the plants' insert: the enabled endpoints, the messages of the rows it
   * inserted (only if an endpoint subscribes to their event type) and a delivery for each message and
   * endpoint subscribed to its type (`event_types` holds it), read and
   * written on the statement's one snapshot. Enabling an endpoint takes `OUTBOX_WRITES_DRAINED`, which
   * waits for the statements in flight (each holds ROW EXCLUSIVE on `webhook_messages` from its parse)
   * and holds back new ones until it commits, so a statement's snapshot, taken after its locks, sees
   * every endpoint enabled before it commits.
   */
  writeWith(inserted: RawBuilder<unknown>, messages: readonly RowMessage[]): OutboxAddition {
    return {
      ctes: sql`,
        outbox_endpoints AS (SELECT id, event_types::jsonb AS event_types FROM webhook_endpoints WHERE NOT disabled),
        outbox_messages AS (
          INSERT INTO webhook_messages (id, event_type, payload, trace_context)
          SELECT m.id, m.event_type, m.payload, m.trace_context
          FROM unnest(${messages.map((m) => m.rowId.toString())}::bigint[], ${messages.map((m) => m.id)}::text[],
                      ${messages.map((m) => m.eventType)}::text[], ${messages.map((m) => m.payload)}::text[],
                      ${messages.map((m) => m.traceContext ?? null)}::text[])
                 AS m (row_id, id, event_type, payload, trace_context)
          JOIN ${inserted} AS i ON i.id = m.row_id
          WHERE EXISTS (SELECT 1 FROM outbox_endpoints e WHERE e.event_types @> jsonb_build_array(m.event_type))
          RETURNING id, event_type),
        outbox_deliveries AS (
          INSERT INTO webhook_deliveries (message_id, endpoint_id)
          SELECT m.id, e.id FROM outbox_messages m
          JOIN outbox_endpoints e ON e.event_types @> jsonb_build_array(m.event_type)
          RETURNING 1)`,
      deliveries: sql`(SELECT count(*) FROM outbox_deliveries)`,
    };
  }
}

/** SQLite's statements of the write, each compiled once. */
function sqliteStatements(db: Kysely<Tables>) {
  const enabled = prepareQuery<Record<string, never>, { id: string; event_types: string }>(() =>
    db.selectFrom('webhook_endpoints').select(['id', 'event_types']).where('disabled', '=', sql.lit(false)).compile(),
  );
  const message = prepareQuery<
    { id: string; eventType: string; payload: string; traceContext: string | null; now: number },
    never
  >(({ id, eventType, payload, traceContext, now }) =>
    db
      .insertInto('webhook_messages')
      .values({ id, event_type: eventType, payload, trace_context: traceContext, created_at: now })
      .compile(),
  );
  const delivery = prepareQuery<{ messageId: string; endpointId: string; now: number }, never>(
    ({ messageId, endpointId, now }) =>
      db
        .insertInto('webhook_deliveries')
        .values({ message_id: messageId, endpoint_id: endpointId, created_at: now, next_attempt_at: now })
        .compile(),
  );
  return { enabled, message, delivery };
}
