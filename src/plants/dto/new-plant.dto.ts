import { ApiSchema } from '@nestjs/swagger';
import { Int64Property } from '../../common/int64/int64-property.decorator';
import { TextProperty } from '../../common/text/text-property.decorator';

/** The request body of `POST /plants`. Unknown properties are accepted and ignored. */
@ApiSchema({ name: 'NewPlant' })
export class NewPlantDto {
  /**
   * Identification number of the plant: any integer in the int64 range, kept exactly.
   * Sending the same id again with the same name and tag is a safe retry.
   * An integer written with a fraction or an exponent (`1e3`, `1.0`) counts when its value is exact.
   *
   * JavaScript clients: `JSON.parse` rounds integers beyond 2^53 (9007199254740993 becomes
   * 9007199254740992). Read and write bodies with a big-integer-aware JSON parser when ids may be that large.
   * @example 10
   */
  @Int64Property()
  id!: bigint;

  /**
   * The name of the plant: 1 to 200 characters, no NUL.
   * @example "Monstera deliciosa"
   */
  @TextProperty({ max: 200 })
  name!: string;

  /**
   * Tag that specifies the type of the plant: 1 to 100 characters, no NUL. Omit it rather than send null.
   * @example "tropical"
   */
  @TextProperty({ max: 100, optional: true })
  tag?: string;

  // A field, one preset each (src/common/), in the order answers list them: docs/fields.md.
}
