import { randomUUID } from 'node:crypto';
import { Transaction } from '../database/transaction';
import { PlantEvents } from '../plants/plant-events';
import { Plant } from '../plants/plant';
import { newPlantPayload } from './new-plant.payload';
import { traceCarrierOf } from '../platform/trace-context';
import { NewMessage } from './persistence/deliveries';
import { OutboxStore } from './persistence/outbox.store';

export const PLANT_CREATED = 'plant.created';

/**
 * The transactional outbox's writer, and plants' `PlantEvents`: inside the transaction that inserts
 * new plants, one message per plant (one webhook-id for every endpoint) and one delivery per
 * endpoint enabled then. So a 200 means its event is as durable as the plant, and no event exists
 * for a plant that was not stored. After the commit it wakes the dispatcher.
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
   * only for those. One entry each, since PostgreSQL's transactions interleave: a flag set by two of
   * them and cleared by the first commit would leave the second commit's deliveries to the poll.
   */
  private readonly wrote = new WeakSet<Transaction>();

  created(transaction: Transaction, plants: readonly Plant[]): void | Promise<void> {
    const messages = (): NewMessage[] =>
      plants.map((plant) => ({
        id: `msg_${randomUUID().replaceAll('-', '')}`,
        eventType: PLANT_CREATED,
        payload: newPlantPayload(plant),
        // The committing request's trace, so the delivery joins it on whichever instance sends it.
        traceContext: traceCarrierOf(plant),
      }));
    // On SQLite the store writes at once (the group commit's transaction is synchronous); on PostgreSQL it is a promise.
    const written = this.outbox.write(transaction, messages);
    if (typeof written === 'number') {
      if (written > 0) this.wrote.add(transaction);
      return;
    }
    return written.then((count) => {
      if (count > 0) this.wrote.add(transaction);
    });
  }

  /** Wakes the dispatcher after a commit that wrote deliveries (with no endpoint, creates cost it nothing). */
  committed(transaction: Transaction): void {
    if (this.wrote.delete(transaction)) this.wake();
  }
}
