import { PageQuery } from '../../common/paging/page';
import { Plant } from '../plant';

/** What `create` did: stored a new plant, or found the identical one already stored. */
export interface CreateResult {
  readonly plant: Plant;
  readonly created: boolean;
}

/**
 * The storage port of the plants feature, and its DI token. Adapters implement it for one
 * database each; nothing of a driver (SQL, rows, driver errors) crosses it. Plants can be
 * deleted, so no method may assume that a row it saw a moment ago is still there.
 *
 * Every method rejects with `StorageUnavailableError` when the store cannot be reached,
 * `StorageTimeoutError` when it took the statement but did not answer in time, `StorageError` otherwise.
 */
export abstract class PlantsRepository {
  /**
   * Stores `plant` durably, or recognises an identical plant already stored under its id.
   * Resolves with the stored plant once it is committed.
   * Rejects with `PlantConflictError` when the id is stored with other content; nothing is changed.
   */
  abstract create(plant: Plant): Promise<CreateResult>;

  /** The plants of one page, ordered by id ascending (signed), read by key, never by offset. */
  abstract list(page: PageQuery): Promise<Plant[]>;

  /** The plant stored under `id`, or `undefined`. */
  abstract get(id: bigint): Promise<Plant | undefined>;

  /** Removes the plant stored under `id`; resolves `true` if there was one, `false` if not. Committed when resolved. */
  abstract delete(id: bigint): Promise<boolean>;
}
