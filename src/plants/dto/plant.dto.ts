import { ApiProperty, ApiSchema } from '@nestjs/swagger';
import { Plant } from '../plant';

/** A plant as the store returns it. It carries no id, as the specification declares. */
@ApiSchema({ name: 'Plant' })
export class PlantDto {
  /**
   * The name of the plant.
   * @example "Monstera deliciosa"
   */
  @ApiProperty({ maxLength: 200 }) // As stored: NewPlant's rule.
  name!: string;

  /**
   * Tag that specifies the type of the plant; omitted when the plant has none.
   * @example "tropical"
   */
  @ApiProperty({ maxLength: 100, required: false })
  tag?: string;
}

/** The response body for a stored plant: name, and tag only when there is one. */
export function toPlantDto(plant: Plant): PlantDto {
  return plant.tag === undefined ? { name: plant.name } : { name: plant.name, tag: plant.tag };
}
