import { Transaction } from '../database/transaction';

/**
 * A feature's port for one kind of domain event, and its DI token: the feature names its own for the
 * event and adds nothing (`export abstract class PlantDeleted extends Events<Plant> {}`), and whoever
 * publishes events (the webhook outbox) implements it; the feature knows nothing more of who listens.
 * Any work in a transaction publishes the same way on either store, a create, a delete or a batch:
 *
 * ```ts
 * await database.transaction('delete a plant', async (tx) => {
 *   const deleted = …; // the transaction's own statements
 *   await this.plantDeleted.publish(tx, deleted);
 * });
 * ```
 */
export abstract class Events<Data> {
  /**
   * Commits one event per item with `tx`'s work: written by the time it resolves, stored if and only
   * if `tx` commits. Awaited inside `Database.transaction`, with `tx` alone, after the change's own
   * statements: from then on the transaction holds back changes to who receives events until it ends
   * (`OUTBOX_WRITES_DRAINED`), so it should wait on nothing more. An item is the event's data as the type
   * writes it (`EventType.data`), and carries the trace of the request it came from (`rememberContext`),
   * if any. Driver errors are thrown as they are (the transaction translates them).
   */
  abstract publish(tx: Transaction, items: readonly Data[]): Promise<void>;
}
