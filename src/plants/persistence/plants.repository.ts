import { Plant } from '../plant';

/** What `create` did: stored a new plant, or found the identical one already stored. */
export interface CreateResult {
  readonly plant: Plant;
  readonly created: boolean;
}

/**
 * The storage port of the plants feature, and its DI token. Adapters implement it for one
 * database each; nothing of a driver (SQL, rows, driver errors) crosses it.
 */
export abstract class PlantsRepository {
  /**
   * Stores `plant` durably, or recognises an identical plant already stored under its id.
   * Resolves with the stored plant once it is committed.
   * Rejects with `PlantConflictError` when the id is stored with other content; nothing is changed.
   * Rejects with `StorageUnavailableError` when the store cannot be reached, `StorageError` otherwise.
   */
  abstract create(plant: Plant): Promise<CreateResult>;

  /** Resolves when the store is reachable and its schema is migrated; rejects otherwise. */
  abstract ping(): Promise<void>;
}
