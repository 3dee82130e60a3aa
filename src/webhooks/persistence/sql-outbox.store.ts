import { Injectable } from '@nestjs/common';
import { Kysely, sql } from 'kysely';
import { Database } from '../../database/database';
import { prepareQuery } from '../../database/prepared-query';
import { StatementResult, Transaction } from '../../database/transaction';
import { Tables } from '../../database/tables';
import { NewMessage } from './deliveries';
import { OutboxStore } from './outbox.store';
import './webhooks.tables';

type Write = (transaction: Transaction, messages: () => readonly NewMessage[]) => number | Promise<number>;

/**
 * The outbox's write in whichever store `DatabaseModule` chose, through the transaction's `execute`
 * (compiled queries, each compiled once: they run with every group commit). The stores differ in
 * how a batch is written, each in its named method:
 *
 * - SQLite (`writeSqlite`): synchronously, inside the group commit's transaction: the enabled
 *   endpoints, then per message its row and one delivery per endpoint. Times: Unix ms.
 * - PostgreSQL (`writePostgres`): one statement for the whole batch (`unnest`), the enabled endpoints
 *   read inside it; times from the server's clock (the columns' defaults).
 */
@Injectable()
export class SqlOutboxStore implements OutboxStore {
  readonly write: Write;

  constructor(database: Database, db: Kysely<Tables>) {
    this.write = database.choose<Write>({
      sqlite: () => this.writeSqlite(db),
      postgres: () => this.writePostgres(db),
    });
  }

  /** SQLite's write: `execute` returns at once, so the whole write finishes inside the call. */
  private writeSqlite(db: Kysely<Tables>): Write {
    const enabled = prepareQuery<Record<string, never>, { id: string }>(() =>
      db.selectFrom('webhook_endpoints').select('id').where('disabled', '=', sql.lit(false)).compile(),
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
    return (transaction, messages) => {
      const run = <Row>(query: Parameters<Transaction['execute']>[0]) =>
        transaction.execute(query) as StatementResult<Row>;
      const endpoints = run<{ id: string }>(enabled({})).rows;
      if (endpoints.length === 0) return 0;
      const now = Date.now();
      let written = 0;
      for (const { id, eventType, payload, traceContext } of messages()) {
        run(message({ id, eventType, payload, traceContext: traceContext ?? null, now }));
        for (const endpoint of endpoints) {
          written += run(delivery({ messageId: id, endpointId: endpoint.id, now })).affectedRows;
        }
      }
      return written;
    };
  }

  /**
   * PostgreSQL's write, one statement and one round trip whatever the batch: the messages (only if
   * an endpoint is enabled) and a delivery for each message and enabled endpoint.
   */
  private writePostgres(db: Kysely<Tables>): Write {
    const insert = prepareQuery<
      { ids: string[]; eventTypes: string[]; payloads: string[]; traceContexts: (string | null)[] },
      never
    >(({ ids, eventTypes, payloads, traceContexts }) =>
      sql<never>`WITH endpoints AS (SELECT id FROM webhook_endpoints WHERE NOT disabled),
               messages AS (
                 INSERT INTO webhook_messages (id, event_type, payload, trace_context)
                 SELECT * FROM unnest(${ids}::text[], ${eventTypes}::text[], ${payloads}::text[], ${traceContexts}::text[])
                 WHERE EXISTS (SELECT 1 FROM endpoints)
                 RETURNING id)
          INSERT INTO webhook_deliveries (message_id, endpoint_id)
          SELECT m.id, e.id FROM messages m CROSS JOIN endpoints e`.compile(db),
    );
    return async (transaction, messages) => {
      const batch = messages();
      const { affectedRows } = await transaction.execute(
        insert({
          ids: batch.map((m) => m.id),
          eventTypes: batch.map((m) => m.eventType),
          payloads: batch.map((m) => m.payload),
          traceContexts: batch.map((m) => m.traceContext ?? null),
        }),
      );
      return affectedRows;
    };
  }
}
