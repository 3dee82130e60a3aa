import { applyDecorators } from '@nestjs/common';
import { ApiProperty } from '@nestjs/swagger';
import { Transform } from 'class-transformer';
import { IsInt, Max, Min, ValidateIf } from 'class-validator';
import { IsInt64 } from '../int64/is-int64.decorator';
import { INT64_SCHEMA } from '../int64/int64-schema';
import { parseDecimalInt64 } from '../int64/parse-int64.pipe';

export const DEFAULT_PAGE_LIMIT = 100;
export const MAX_PAGE_LIMIT = 1000;
const LIMIT_MESSAGE = `limit must be a decimal integer from 1 to ${MAX_PAGE_LIMIT}`;
// Digits only: no sign, dot, exponent or spaces. Longer strings are refused before they become numbers.
const SMALL_DECIMAL = /^[0-9]{1,6}$/;

/**
 * The `limit` query parameter of a page: a plain decimal integer from 1 to MAX_PAGE_LIMIT, declared
 * with its bounds and default. For a page query whose cursor is not an int64 (give the property the
 * default, `limit: number = DEFAULT_PAGE_LIMIT`).
 */
export const PageLimit = (): PropertyDecorator =>
  applyDecorators(
    ApiProperty({
      type: 'integer',
      format: 'int32',
      minimum: 1,
      maximum: MAX_PAGE_LIMIT,
      default: DEFAULT_PAGE_LIMIT,
      required: false,
    }),
    Max(MAX_PAGE_LIMIT, { message: LIMIT_MESSAGE }),
    Min(1, { message: LIMIT_MESSAGE }),
    IsInt({ message: LIMIT_MESSAGE }),
    Transform(({ value }: { value: unknown }) =>
      typeof value === 'string' && SMALL_DECIMAL.test(value) ? Number(value) : value,
    ),
  );

/**
 * The query of a list keyed on an int64 id (`GET /plants`): `limit` and `after`, read as plain
 * decimal integers only; a repeated parameter arrives as a list and is refused. Unknown parameters
 * are ignored.
 */
export class PageQueryDto {
  /** How many items to return at most. */
  @PageLimit()
  limit: number = DEFAULT_PAGE_LIMIT;

  /**
   * Return only items whose id is greater than this one (exclusive): the last id of the page
   * before. The `Link: rel="next"` header of a page carries it; follow that header rather than
   * building the URL. Decimal digits with an optional leading minus; ids beyond 2^53 are exact.
   * (No example on purpose: the docs page would fill it in, and "Try it out" would skip items.)
   */
  @ApiProperty({ ...INT64_SCHEMA, required: false })
  @ValidateIf((query: PageQueryDto) => query.after !== undefined)
  @IsInt64({ message: 'after must be a decimal integer in the int64 range' })
  @Transform(({ value }: { value: unknown }) => parseDecimalInt64(value) ?? value)
  after?: bigint;
}
