import { randomUUID } from 'node:crypto';
import { RawBuilder } from 'kysely';
import { StatementAddition } from '../database/statement-addition';
import { Transaction } from '../database/transaction';
import { PlantEvents } from '../plants/plant-events';
import { Plant } from '../plants/plant';
import { newPlantPayload } from './new-plant.payload';
import { traceCarrierOf } from '../platform/trace-context';
import { NewMessage } from './persistence/deliveries';
import { OutboxStore } from './persistence/outbox.store';

export const PLANT_CREATED = 'plant.created';

/**
 * The transactional outbox's writer, and plants' `PlantEvents`: with the plants a store inserts, one
 * message per plant (one webhook-id for every endpoint) and one delivery per endpoint enabled then,
 * committed together. So a 200 means its event is as durable as the plant, and no event exists for a
 * plant that was not stored. After the commit it wakes the dispatcher, only if deliveries were written.
 *
 * - SQLite: `created` writes inside the group commit's transaction, `committed` follows its commit.
 * - PostgreSQL: `createdInStatement` makes the write part of the plants' one insert statement.
 */
export class OutboxWriter extends PlantEvents {
  constructor(
    private readonly outbox: OutboxStore,
    private readonly wake: () => void,
  ) {
    super();
  }

  /**
   * Transactions that wrote deliveries and are not yet reported committed: the dispatcher is woken
   * only for those. One entry each, should transactions ever interleave: a flag set by two of them
   * and cleared by the first commit would leave the second commit's deliveries to the poll.
   */
  private readonly wrote = new WeakSet<Transaction>();

  created(transaction: Transaction, plants: readonly Plant[]): void {
    if (this.outbox.write(transaction, () => plants.map(messageOf)) > 0) this.wrote.add(transaction);
  }

  /** Wakes the dispatcher after a commit that wrote deliveries (with no endpoint, creates cost it nothing). */
  committed(transaction: Transaction): void {
    if (this.wrote.delete(transaction)) this.wake();
  }

  createdInStatement(inserted: RawBuilder<unknown>, plants: readonly Plant[]): StatementAddition {
    // Made for every plant of the batch (the statement alone knows which it inserts, and whether an
    // endpoint is enabled): a few hundred bytes each, against a round trip to ask first.
    const { ctes, deliveries } = this.outbox.writeWith(
      inserted,
      plants.map((plant) => ({ rowId: plant.id, ...messageOf(plant) })),
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
}

function messageOf(plant: Plant): NewMessage {
  return {
    id: `msg_${randomUUID().replaceAll('-', '')}`,
    eventType: PLANT_CREATED,
    payload: newPlantPayload(plant),
    // The committing request's trace, so the delivery joins it on whichever instance sends it.
    traceContext: traceCarrierOf(plant),
  };
}
