import { ApiProperty, ApiSchema } from '@nestjs/swagger';
import { Transform } from 'class-transformer';
import { IsDefined, IsString, Length, Matches, ValidateIf } from 'class-validator';
import { IsInt64 } from '../../common/int64/is-int64.decorator';
import { INT64_SCHEMA } from '../../common/int64/int64-schema';

/**
 * The request body of `POST /plants`. Unknown properties are accepted and ignored.
 *
 * class-validator checks a property's rules from the bottom decorator up and the pipe stops at the
 * first failure, so the type check sits last: `"name": 5` reads "name must be a string".
 */
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
  @ApiProperty(INT64_SCHEMA)
  @IsDefined({ message: 'id is required' })
  @IsInt64()
  @Transform(({ value }: { value: unknown }) =>
    typeof value === 'number' && Number.isSafeInteger(value) ? BigInt(value) : value,
  )
  id!: bigint;

  /**
   * The name of the plant: 1 to 200 characters, no NUL.
   * @example "Monstera deliciosa"
   */
  @IsDefined({ message: 'name is required' })
  // eslint-disable-next-line no-control-regex -- NUL is exactly what this rule refuses.
  @Matches(/^[^\u0000\uD800-\uDFFF]*$/u, {
    message: 'name must be Unicode text without NUL characters',
  })
  @Length(1, 200, { message: 'name must be 1 to 200 characters long' })
  @IsString({ message: 'name must be a string' })
  name!: string;

  /**
   * Tag that specifies the type of the plant: 1 to 100 characters, no NUL. Omit it rather than send null.
   * @example "tropical"
   */
  @ValidateIf((plant: NewPlantDto) => plant.tag !== undefined)
  // eslint-disable-next-line no-control-regex -- NUL is exactly what this rule refuses.
  @Matches(/^[^\u0000\uD800-\uDFFF]*$/u, {
    message: 'tag must be Unicode text without NUL characters',
  })
  @Length(1, 100, { message: 'tag must be 1 to 100 characters long' })
  @IsString({ message: 'tag must be a string' })
  tag?: string;
}
