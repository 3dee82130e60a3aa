import { Injectable } from '@nestjs/common';
import { CompiledQuery, Kysely, RawBuilder, sql } from 'kysely';
import { prepareQuery } from '../../database/prepared-query';
import { StatementResult, Transaction, TransactionOptions } from '../../database/transaction';
import { Tables } from '../../database/tables';
import { NewMessage } from '../deliveries';
import { OutboxAddition, OutboxStore, RowMessage } from './outbox.store';
import './webhooks.tables';

/**
 * What a change to which endpoints get events (a create, enable, reconcile or delete) takes with its
 * BEGIN on PostgreSQL: SHARE on `webhook_messages` conflicts with the ROW EXCLUSIVE every plants insert
 * takes there at parse time, before its snapshot, whether it writes a message or not. So the change
 * waits for the inserts in flight (which owe a new endpoint nothing), and later inserts wait for its
 * commit and see it: none misses an endpoint enabled before it, and a delete leaves none of its
 * deliveries behind. Inserts never wait on one another (ROW EXCLUSIVE does not conflict with itself).
 */
export const OUTBOX_WRITES_DRAINED: TransactionOptions = { holdWritesTo: ['webhook_messages'] };

/**
 * The outbox's write in the form of each store's group commit (see `OutboxStore`). SQLite's times
 * are Unix ms of this process; PostgreSQL's come from the server's clock (the columns' defaults).
 */
@Injectable()
export class SqlOutboxStore implements OutboxStore {
  private statements?: ReturnType<typeof sqliteStatements>;

  constructor(private readonly db: Kysely<Tables>) {}

  write(transaction: Transaction, messages: () => readonly NewMessage[]): number {
    const { enabled, message, delivery } = (this.statements ??= sqliteStatements(this.db));
    // SQLite's transaction runs each statement at once.
    const run = <Row>(query: CompiledQuery<Row>) => transaction.execute(query) as StatementResult<Row>;
    const endpoints = run(enabled).rows.map(({ id, event_types }) => ({
      id,
      eventTypes: JSON.parse(event_types) as string[],
    }));
    if (endpoints.length === 0) return 0;
    const now = Date.now();
    let written = 0;
    for (const { id, eventType, payload, traceContext } of messages()) {
      const subscribed = endpoints.filter((endpoint) => endpoint.eventTypes.includes(eventType));
      if (subscribed.length === 0) continue;
      run(message({ id, eventType, payload, traceContext: traceContext ?? null, now }));
      for (const endpoint of subscribed) {
        written += run(delivery({ messageId: id, endpointId: endpoint.id, now })).affectedRows;
      }
    }
    return written;
  }

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

type MessageValues = { id: string; eventType: string; payload: string; traceContext: string | null; now: number };

/** SQLite's statements of the write, compiled once: the group commit runs them once per plant. */
function sqliteStatements(db: Kysely<Tables>) {
  return {
    enabled: db
      .selectFrom('webhook_endpoints')
      .select(['id', 'event_types'])
      .where('disabled', '=', sql.lit(false))
      .compile(),
    message: prepareQuery(({ id, eventType, payload, traceContext, now }: MessageValues) =>
      db
        .insertInto('webhook_messages')
        .values({ id, event_type: eventType, payload, trace_context: traceContext, created_at: now })
        .compile(),
    ),
    delivery: prepareQuery(({ messageId, endpointId, now }: { messageId: string; endpointId: string; now: number }) =>
      db
        .insertInto('webhook_deliveries')
        .values({ message_id: messageId, endpoint_id: endpointId, created_at: now, next_attempt_at: now })
        .compile(),
    ),
  };
}
