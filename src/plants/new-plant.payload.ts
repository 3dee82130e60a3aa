import { Plant } from './plant';

/**
 * A plant as its events carry it: exactly the NewPlant, `{"id": …, "name": …, "tag": …}`, with the id
 * written as its exact digits (a bigint never passes through a double) and `tag` only when there is
 * one. The whole body of `plant.created`, the `data` of `plant.deleted`.
 */
export function newPlantPayload(plant: Plant): string {
  const tag = plant.tag === undefined ? '' : `,"tag":${JSON.stringify(plant.tag)}`;
  return `{"id":${plant.id.toString()},"name":${JSON.stringify(plant.name)}${tag}}`;
}
