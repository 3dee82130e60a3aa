import { ApiProperty } from '@nestjs/swagger';
import { Transform } from 'class-transformer';
import { IsInt, Max, Min, ValidateIf } from 'class-validator';
import { parseDecimalInt64 } from '../../common/int64/parse-int64.pipe';
import { IsInt64 } from '../../common/int64/is-int64.decorator';

export const DEFAULT_PAGE_LIMIT = 100;
export const MAX_PAGE_LIMIT = 1000;
const LIMIT_MESSAGE = `limit must be a decimal integer from 1 to ${MAX_PAGE_LIMIT}`;
// Digits only: no sign, dot, exponent or spaces. Longer strings are refused before they become numbers.
const SMALL_DECIMAL = /^[0-9]{1,6}$/;

/**
 * The query of `GET /plants`. Values arrive as text and are read as plain decimal integers only;
 * a repeated parameter arrives as a list and is refused. Unknown parameters are ignored.
 */
export class ListPlantsQueryDto {
  /** How many plants to return at most. */
  @ApiProperty({
    type: 'integer',
    format: 'int32',
    minimum: 1,
    maximum: MAX_PAGE_LIMIT,
    default: DEFAULT_PAGE_LIMIT,
    required: false,
  })
  @Max(MAX_PAGE_LIMIT, { message: LIMIT_MESSAGE })
  @Min(1, { message: LIMIT_MESSAGE })
  @IsInt({ message: LIMIT_MESSAGE })
  @Transform(({ value }: { value: unknown }) =>
    typeof value === 'string' && SMALL_DECIMAL.test(value) ? Number(value) : value,
  )
  limit: number = DEFAULT_PAGE_LIMIT;

  /**
   * Return only plants whose id is greater than this one (exclusive): the last id of the page
   * before. The `Link: rel="next"` header of a page carries it; follow that header rather than
   * building the URL. Decimal digits with an optional leading minus; ids beyond 2^53 are exact.
   * (No example on purpose: the docs page would fill it in, and "Try it out" would skip plants.)
   */
  @ApiProperty({ type: 'integer', format: 'int64', required: false })
  @ValidateIf((query: ListPlantsQueryDto) => query.after !== undefined)
  @IsInt64({ message: 'after must be a decimal integer in the int64 range' })
  @Transform(({ value }: { value: unknown }) => parseDecimalInt64(value) ?? value)
  after?: bigint;
}
