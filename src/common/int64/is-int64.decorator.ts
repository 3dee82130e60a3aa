import { ValidateBy, ValidationOptions } from 'class-validator';

export const INT64_MIN = -(2n ** 63n);
export const INT64_MAX = 2n ** 63n - 1n;

/** True for a bigint in the signed 64-bit range. */
export function isInt64(value: unknown): value is bigint {
  return typeof value === 'bigint' && value >= INT64_MIN && value <= INT64_MAX;
}

/**
 * Checks that a property holds an exact int64. The JSON body parser hands over integers beyond
 * 2^53 as bigint, and `@Type`-free `@Transform` in the DTO turns the safe ones into bigint too,
 * so a number here is one that was never an integer (1.5, 1e300).
 */
export function IsInt64(options?: ValidationOptions): PropertyDecorator {
  return ValidateBy(
    {
      name: 'isInt64',
      validator: {
        validate: isInt64,
        defaultMessage: () => '$property must be an integer in the int64 range',
      },
    },
    options,
  );
}
