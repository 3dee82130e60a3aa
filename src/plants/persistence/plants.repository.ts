import { PageQuery } from '../../common/paging/page';
import { Plant } from '../plant';

/**
 * The storage port of the plants feature, and its DI token. Nothing of a driver crosses it.
 * A plant can be deleted: no method may assume that a row it saw a moment ago is still there.
 * Every method rejects with `StorageUnavailableError` when the store cannot be reached,
 * `StorageTimeoutError` when it did not answer in time, `StorageError` otherwise.
 */
export abstract class PlantsRepository {
  /**
   * Stores `plant` durably, or recognises the same one already stored under its id
   * (`created: false`). Rejects with `ResourceConflictError` when its id holds other content;
   * nothing is changed.
   */
  abstract create(plant: Plant): Promise<{ readonly created: boolean }>;

  /** The plants of one page, ordered by id ascending (signed), read by key, never by offset. */
  abstract list(page: PageQuery): Promise<Plant[]>;

  /** The plant stored under `id`, or `undefined`. */
  abstract get(id: bigint): Promise<Plant | undefined>;

  /** Removes the plant stored under `id`; resolves `true` if there was one, `false` if not. Committed when resolved. */
  abstract delete(id: bigint): Promise<boolean>;
}
