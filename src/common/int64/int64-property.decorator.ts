import { applyDecorators } from '@nestjs/common';
import { ApiProperty } from '@nestjs/swagger';
import { Transform } from 'class-transformer';
import { IsDefined } from 'class-validator';
import { INT64_SCHEMA } from './int64-schema';
import { IsInt64 } from './is-int64.decorator';

/**
 * A required int64 property of a request body (an id), kept exactly: documented as `INT64_SCHEMA`,
 * "<property> is required" when absent or null, "<property> must be an integer in the int64 range"
 * otherwise. The JSON parser hands integers beyond 2^53 over as bigint; the safe ones become bigint
 * here, so the property is always a bigint. Describe it with a JSDoc comment (and `@example`).
 */
export const Int64Property = (): PropertyDecorator =>
  // Applied in this order, which is the order of the stacked decorators from the bottom up.
  applyDecorators(
    Transform(({ value }: { value: unknown }) =>
      typeof value === 'number' && Number.isSafeInteger(value) ? BigInt(value) : value,
    ),
    IsInt64(),
    IsDefined({ message: '$property is required' }),
    ApiProperty({ ...INT64_SCHEMA }),
  );
