import { ApiProperty, ApiSchema } from '@nestjs/swagger';
import { Plant } from '../plant';

/** A plant as its create answers it: its fields without the id. */
@ApiSchema({ name: 'Plant' })
export class PlantDto {
  /**
   * The name of the plant.
   * @example "Monstera deliciosa"
   */
  @ApiProperty({ maxLength: 200 })
  name!: string;

  /**
   * Tag that specifies the type of the plant; omitted when the plant has none.
   * @example "tropical"
   */
  @ApiProperty({ maxLength: 100, required: false })
  tag?: string;
}

/** The answer of a create: the plant's fields, an absent one left out, without the id. */
export function toPlantDto(plant: Plant): PlantDto {
  return { name: plant.name, ...(plant.tag === undefined ? {} : { tag: plant.tag }) };
}
