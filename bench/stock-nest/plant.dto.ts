import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Type } from 'class-transformer';
import { IsInt, IsOptional, IsString, Length, Max, Min } from 'class-validator';

/**
 * The create body, checked the stock way. Less exact than the service: JSON.parse rounds an id above
 * 2^53 before @IsInt() sees it (9007199254740993 is stored as 9007199254740992), the int64 range is not
 * checked, @IsOptional() lets `"tag": null` through, and NUL or lone surrogates are accepted in text.
 */
export class NewPlantDto {
  @ApiProperty({ type: 'integer', format: 'int64' })
  @IsInt()
  id!: number;

  @ApiProperty({ minLength: 1, maxLength: 200 })
  @IsString()
  @Length(1, 200)
  name!: string;

  @ApiPropertyOptional({ minLength: 1, maxLength: 100 })
  @IsOptional()
  @IsString()
  @Length(1, 100)
  tag?: string;
}

/** `GET /plants?limit&after`: query strings turned into numbers by class-transformer, then checked. */
export class ListPlantsQuery {
  @ApiPropertyOptional({ type: 'integer', minimum: 1, maximum: 1000, default: 100 })
  @IsOptional()
  @Type(() => Number)
  @IsInt()
  @Min(1)
  @Max(1000)
  limit: number = 100;

  @ApiPropertyOptional({ type: 'integer', format: 'int64' })
  @IsOptional()
  @Type(() => Number)
  @IsInt()
  after?: number;
}
