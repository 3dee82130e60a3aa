import { Transaction } from '../database/transaction';
import { Plant } from './plant';

/**
 * The port through which plants records "plants created": what else must commit together with new
 * plants. The repositories call `created` inside the transaction that inserted them (only those it
 * inserted, never a replay), and `committed` once it has committed. Plants knows nothing more of who
 * listens; the module passed to `PlantsModule.register` provides it (the webhook outbox).
 */
export abstract class PlantEvents {
  /** Inside the transaction that inserted `plants`. On SQLite it must finish before it returns. */
  abstract created(transaction: Transaction, plants: readonly Plant[]): void | Promise<void>;

  /** After `transaction` committed (the same object `created` was given). */
  abstract committed(transaction: Transaction): void;
}
