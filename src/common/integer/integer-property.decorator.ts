import { ApiProperty } from '@nestjs/swagger';
import { IsInt, Max, Min } from 'class-validator';
import { bodyProperty } from '../body/body-property';

const INT32_MIN = -(2 ** 31);
const INT32_MAX = 2 ** 31 - 1;

export interface IntegerPropertyOptions {
  /** The smallest value allowed, within int32. */
  readonly min: number;
  /** The largest value allowed, within int32. */
  readonly max: number;
  /** May be absent (never null: `"count": null` breaks its rule). Required by default. */
  readonly optional?: boolean;
}

/**
 * An integer property of a request body, from `min` to `max` (both within int32: an `integer` column
 * on both stores; an id or anything wider is an `@Int64Property()`), documented with those bounds as
 * an `int32`. Two messages, naming the property: "count is required" when absent (or null, if
 * required), and "count must be an integer between 1 and 10000" for anything else that is not such an
 * integer: a string ("3"), a fraction, a boolean, a number out of range. Describe it with a JSDoc
 * comment (and `@example`).
 */
export function IntegerProperty({ min, max, optional = false }: IntegerPropertyOptions): PropertyDecorator {
  if (![min, max].every((bound) => Number.isInteger(bound) && bound >= INT32_MIN && bound <= INT32_MAX) || min > max) {
    throw new Error(`IntegerProperty: min ${min} and max ${max} must be int32 integers, min <= max`);
  }
  // One message for every way to miss the range, as the config's and the int64's rules word theirs.
  const message = `$property must be an integer between ${min} and ${max}`;
  const rules = [
    IsInt({ message }),
    Min(min, { message }),
    Max(max, { message }),
    ApiProperty({ type: 'integer', format: 'int32', required: !optional, minimum: min, maximum: max }),
  ];
  return bodyProperty(optional, rules);
}
