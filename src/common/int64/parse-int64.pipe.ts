import { ArgumentMetadata, BadRequestException, Injectable, PipeTransform } from '@nestjs/common';
import { withoutStack } from '../errors/without-stack';
import { INT64_MAX, INT64_MIN } from './is-int64.decorator';

// A plain decimal: an optional minus and digits only (no +, spaces, dot, exponent or hex).
const DECIMAL = /^-?[0-9]+$/;
// Longer than any int64 even with a few leading zeros; BigInt() of a longer string is never parsed.
const MAX_LENGTH = 32;

/** The exact int64 a decimal string spells, or `undefined` for anything else (never a rounded number). */
export function parseDecimalInt64(value: unknown): bigint | undefined {
  if (typeof value !== 'string' || value.length > MAX_LENGTH || !DECIMAL.test(value)) return undefined;
  const parsed = BigInt(value);
  return parsed >= INT64_MIN && parsed <= INT64_MAX ? parsed : undefined;
}

/**
 * Turns a path or query parameter into an exact int64 (a bigint), or answers 400 naming the
 * parameter. Nest's `ParseIntPipe` goes through a double and would round ids beyond 2^53.
 */
@Injectable()
export class ParseInt64Pipe implements PipeTransform<unknown, bigint> {
  transform(value: unknown, metadata: ArgumentMetadata): bigint {
    const parsed = parseDecimalInt64(value);
    if (parsed === undefined) {
      throw withoutStack(
        () => new BadRequestException(`${metadata.data ?? 'value'} must be a decimal integer in the int64 range`),
      );
    }
    return parsed;
  }
}
