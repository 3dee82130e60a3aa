import { Plant } from '../plant';

/**
 * The storage port of the plants feature, and its DI token. Adapters implement it for one
 * database each; nothing of a driver (SQL, rows, driver errors) crosses it.
 */
export abstract class PlantsRepository {
  /**
   * Stores `plant` durably, or recognises an identical plant already stored under its id.
   * Resolves with the stored plant once it is committed.
   * Rejects with `PlantConflictError` when the id is stored with other content; nothing is changed.
   */
  abstract create(plant: Plant): Promise<Plant>;
}
