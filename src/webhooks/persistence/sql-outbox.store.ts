import { Injectable } from '@nestjs/common';
import { CompiledQuery, Kysely, sql } from 'kysely';
import { Database } from '../../database/database';
import { fixedText, prepareQuery } from '../../database/prepared-query';
import { StatementResult, Transaction, TransactionOptions } from '../../database/transaction';
import { Tables } from '../../database/tables';
import { NewMessage } from '../deliveries';
import { EndpointFound, OutboxStore } from './outbox.store';
import { flagOf } from './webhooks.tables';

/**
 * What a change to which endpoints get events (a create, enable, reconcile or delete) takes with its
 * BEGIN on PostgreSQL: SHARE on `webhook_messages` conflicts with the ROW EXCLUSIVE that the outbox's
 * write statement takes there at parse time, before its snapshot, whether it writes a message or not,
 * and holds until its transaction ends. So the change waits for the transactions that have written
 * (which owe a new endpoint nothing), and later writes wait for its commit and see it: none misses an
 * endpoint enabled before it, and a delete leaves none of its deliveries behind. Writes never wait on
 * one another (ROW EXCLUSIVE does not conflict with itself).
 */
export const OUTBOX_WRITES_DRAINED: TransactionOptions = { holdWritesTo: ['webhook_messages'] };

/**
 * The outbox's write (see `OutboxStore`), in each store's form, each in its named method: SQLite's
 * statements run at once inside the writer's `BEGIN IMMEDIATE`, PostgreSQL's one statement reads the
 * endpoints where it writes. SQLite's times are Unix ms of this process; PostgreSQL's the server's.
 */
@Injectable()
export class SqlOutboxStore implements OutboxStore {
  private statements?: ReturnType<typeof sqliteStatements>;
  private postgresStatement?: ReturnType<typeof postgresStatement>;

  constructor(
    private readonly database: Database,
    private readonly db: Kysely<Tables>,
  ) {}

  write(tx: Transaction, messages: () => readonly NewMessage[]): Promise<number> {
    return this.database.kind === 'sqlite' ? this.writeSqlite(tx, messages) : this.writePostgres(tx, messages());
  }

  writeTo(tx: Transaction, endpointId: string, message: NewMessage): Promise<EndpointFound> {
    return this.database.kind === 'sqlite'
      ? this.writeToSqlite(tx, endpointId, message)
      : this.writeToPostgres(tx, endpointId, message);
  }

  /**
   * The enabled endpoints, then a message and its deliveries at a time, each statement compiled once
   * (the group commit runs them once per event); with no enabled endpoint the messages are not even
   * made. Nothing else of this process runs between them: the writer holds SQLite's only write turn.
   */
  private async writeSqlite(tx: Transaction, messages: () => readonly NewMessage[]): Promise<number> {
    const { enabled, message, delivery } = (this.statements ??= sqliteStatements(this.db));
    // SQLite's transaction runs each statement at once.
    const run = <Row>(query: CompiledQuery<Row>) => tx.execute(query) as StatementResult<Row>;
    const endpoints = run(enabled).rows.map(({ id, event_types }) => ({
      id,
      eventTypes: JSON.parse(event_types) as string[],
    }));
    if (endpoints.length === 0) return 0;
    const now = Date.now();
    let written = 0;
    for (const { id, eventType, data, enveloped, traceContext } of messages()) {
      const subscribed = endpoints.filter((endpoint) => endpoint.eventTypes.includes(eventType));
      if (subscribed.length === 0) continue;
      run(message({ id, eventType, data, enveloped: enveloped ? 1 : 0, traceContext: traceContext ?? null, now }));
      for (const endpoint of subscribed) {
        written += run(delivery({ messageId: id, endpointId: endpoint.id, now })).affectedRows;
      }
    }
    return written;
  }

  /**
   * One statement: the enabled endpoints (read where the messages are written, see
   * `OUTBOX_WRITES_DRAINED`), the messages some endpoint subscribes to, and a delivery for each such
   * endpoint; the values as one array per column, so its text is fixed (compiled once, a prepared
   * statement). Its time is the statement's start (not the transaction's), in whole ms: what an
   * envelope's `timestamp` says.
   */
  private async writePostgres(tx: Transaction, messages: readonly NewMessage[]): Promise<number> {
    const { rows } = await tx.execute(
      (this.postgresStatement ??= postgresStatement(this.db))({
        ids: messages.map((m) => m.id),
        eventTypes: messages.map((m) => m.eventType),
        data: messages.map((m) => m.data),
        enveloped: messages.map((m) => m.enveloped),
        traceContexts: messages.map((m) => m.traceContext ?? null),
      }),
    );
    // A count is a bigint, which pg gives as text.
    return Number(rows[0].deliveries);
  }

  /** The endpoint, then the message and its delivery if it is enabled, in the writer's `BEGIN IMMEDIATE`. */
  private async writeToSqlite(tx: Transaction, endpointId: string, message: NewMessage): Promise<EndpointFound> {
    const statements = (this.statements ??= sqliteStatements(this.db));
    const run = <Row>(query: CompiledQuery<Row>) => tx.execute(query) as StatementResult<Row>;
    const [endpoint] = run(statements.endpoint({ id: endpointId })).rows;
    if (endpoint === undefined) return 'none';
    if (flagOf(endpoint.disabled)) return 'disabled';
    const { id, eventType, data, enveloped, traceContext } = message;
    const now = Date.now();
    run(
      statements.message({
        id,
        eventType,
        data,
        enveloped: enveloped ? 1 : 0,
        traceContext: traceContext ?? null,
        now,
      }),
    );
    run(statements.delivery({ messageId: id, endpointId, now }));
    return 'enabled';
  }

  /**
   * One statement, as `writePostgres`: the endpoint's row locked (`FOR SHARE`), then the message and
   * its delivery only if it is enabled; it answers what it found. The lock makes a change of the row
   * wait for this transaction, or this statement wait for that change and read the row as changed: so
   * a write never lands beside a disable (the service's fails the pending deliveries it sees) nor after
   * a delete (which also waits, on `OUTBOX_WRITES_DRAINED`). Endpoint row first, then the delivery: the
   * lock order of every transaction that writes both.
   */
  private async writeToPostgres(tx: Transaction, endpointId: string, message: NewMessage): Promise<EndpointFound> {
    const { id, eventType, data, enveloped, traceContext } = message;
    const { rows } = await tx.execute(
      fixedText(
        sql<{ disabled: boolean | null }>`
          WITH outbox_endpoint AS (
            SELECT id, disabled FROM webhook_endpoints WHERE id = ${endpointId}::text FOR SHARE),
          outbox_message AS (
            INSERT INTO webhook_messages (id, event_type, payload, enveloped, trace_context, created_at)
            SELECT ${id}::text, ${eventType}::text, ${data}::text, ${enveloped}::boolean, ${traceContext ?? null}::text,
                   date_trunc('milliseconds', statement_timestamp())
            FROM outbox_endpoint WHERE NOT disabled
            RETURNING id, created_at),
          outbox_delivery AS (
            INSERT INTO webhook_deliveries (message_id, endpoint_id, created_at)
            SELECT m.id, e.id, m.created_at FROM outbox_message m CROSS JOIN outbox_endpoint e)
          SELECT (SELECT disabled FROM outbox_endpoint) AS disabled`.compile(this.db),
      ),
    );
    const { disabled } = rows[0];
    return disabled === null ? 'none' : disabled ? 'disabled' : 'enabled';
  }
}

/** PostgreSQL's statement of the write (see `writePostgres`), compiled once. */
function postgresStatement(db: Kysely<Tables>) {
  type Columns = {
    ids: string[];
    eventTypes: string[];
    data: string[];
    enveloped: boolean[];
    traceContexts: (string | null)[];
  };
  return prepareQuery(({ ids, eventTypes, data, enveloped, traceContexts }: Columns) =>
    sql<{ deliveries: string }>`
      WITH outbox_endpoints AS (
        SELECT id, event_types::jsonb AS event_types FROM webhook_endpoints WHERE NOT disabled),
      outbox_messages AS (
        INSERT INTO webhook_messages (id, event_type, payload, enveloped, trace_context, created_at)
        SELECT m.id, m.event_type, m.payload, m.enveloped, m.trace_context,
               date_trunc('milliseconds', statement_timestamp())
        FROM unnest(${ids}::text[], ${eventTypes}::text[], ${data}::text[], ${enveloped}::boolean[],
                    ${traceContexts}::text[])
             AS m (id, event_type, payload, enveloped, trace_context)
        WHERE EXISTS (SELECT 1 FROM outbox_endpoints e WHERE e.event_types @> jsonb_build_array(m.event_type))
        RETURNING id, event_type, created_at),
      outbox_deliveries AS (
        INSERT INTO webhook_deliveries (message_id, endpoint_id, created_at)
        SELECT m.id, e.id, m.created_at FROM outbox_messages m
        JOIN outbox_endpoints e ON e.event_types @> jsonb_build_array(m.event_type)
        RETURNING 1)
      SELECT count(*) AS deliveries FROM outbox_deliveries`.compile(db),
  );
}

type MessageValues = {
  id: string;
  eventType: string;
  data: string;
  enveloped: number;
  traceContext: string | null;
  now: number;
};

/** SQLite's statements of the write, compiled once: the group commit runs them once per event. */
function sqliteStatements(db: Kysely<Tables>) {
  return {
    endpoint: prepareQuery(({ id }: { id: string }) =>
      db.selectFrom('webhook_endpoints').select('disabled').where('id', '=', id).compile(),
    ),
    enabled: db
      .selectFrom('webhook_endpoints')
      .select(['id', 'event_types'])
      .where('disabled', '=', sql.lit(false))
      .compile(),
    message: prepareQuery(({ id, eventType, data, enveloped, traceContext, now }: MessageValues) =>
      db
        .insertInto('webhook_messages')
        .values({
          id,
          event_type: eventType,
          payload: data,
          // 0 or 1: better-sqlite3 binds no boolean.
          enveloped: sql<boolean>`${enveloped}`,
          trace_context: traceContext,
          created_at: now,
        })
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
