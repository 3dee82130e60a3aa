import { randomUUID } from 'node:crypto';
import { RawBuilder } from 'kysely';
import { CreatedEvents } from '../common/events/created-events';
import { EventType } from '../common/events/event-type';
import { StatementAddition } from '../database/statement-addition';
import { Transaction } from '../database/transaction';
import { traceCarrierOf } from '../platform/trace-context';
import { NewMessage } from './deliveries';
import { OutboxStore } from './persistence/outbox.store';

/**
 * The transactional outbox's writer of one event type, and so that feature's port (`PlantEvents` for
 * `plant.created`): with the rows a store inserts, one message per row (one webhook-id for every
 * endpoint) and one delivery per endpoint enabled then and subscribed to the type, committed
 * together. So a 200 means its event is as durable as the row, and no event exists for a row that was
 * not stored. After the commit it wakes the dispatcher, only if deliveries were written.
 *
 * - SQLite: `created` writes inside the write's transaction, `committed` follows its commit.
 * - PostgreSQL: `createdInStatement` makes the write part of the rows' one insert statement.
 */
export class OutboxWriter<Row extends object> extends CreatedEvents<Row> {
  constructor(
    private readonly outbox: OutboxStore,
    private readonly wake: () => void,
    private readonly type: EventType<Row>,
  ) {
    super();
  }

  /**
   * Transactions that wrote deliveries and are not yet reported committed: the dispatcher is woken
   * only for those. One entry each, should transactions ever interleave: a flag set by two of them
   * and cleared by the first commit would leave the second commit's deliveries to the poll.
   */
  private readonly wrote = new WeakSet<Transaction>();

  created(transaction: Transaction, rows: readonly Row[]): void {
    if (this.outbox.write(transaction, () => rows.map((row) => this.messageOf(row))) > 0) this.wrote.add(transaction);
  }

  /** Wakes the dispatcher after a commit that wrote deliveries (with no endpoint, creates cost it nothing). */
  committed(transaction: Transaction): void {
    if (this.wrote.delete(transaction)) this.wake();
  }

  createdInStatement(inserted: RawBuilder<unknown>, rows: readonly Row[]): StatementAddition {
    // Made for every row of the batch (the statement alone knows which it inserts, and whether an
    // endpoint is subscribed): a few hundred bytes each, against a round trip to ask first.
    const { ctes, deliveries } = this.outbox.writeWith(
      inserted,
      rows.map((row) => ({ rowId: this.type.key(row), ...this.messageOf(row) })),
    );
    return {
      ctes,
      outcome: deliveries,
      // A count is a bigint, which pg gives as text.
      committed: (written) => {
        if (Number(written) > 0) this.wake();
      },
    };
  }

  private messageOf(row: Row): NewMessage {
    return {
      id: `msg_${randomUUID().replaceAll('-', '')}`,
      eventType: this.type.name,
      payload: this.type.payload(row),
      // The committing request's trace, so the delivery joins it on whichever instance sends it.
      traceContext: traceCarrierOf(row),
    };
  }
}
