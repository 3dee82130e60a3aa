/** The id is already stored with another name or tag. */
export class PlantConflictError extends Error {
  override readonly name = 'PlantConflictError';

  constructor(readonly id: bigint) {
    super(`A plant with id ${id} already exists with a different name or tag`);
  }
}
