import { Plant } from './plant';

/**
 * The webhook body: exactly the NewPlant, `{"id": …, "name": …, "tag": …}`, with the id written as
 * its exact digits (a bigint never passes through a double) and `tag` only when there is one.
 */
export function newPlantPayload(plant: Plant): string {
  const tag = plant.tag === undefined ? '' : `,"tag":${JSON.stringify(plant.tag)}`;
  return `{"id":${plant.id.toString()},"name":${JSON.stringify(plant.name)}${tag}}`;
}
