import { BadRequestException } from '@nestjs/common';
import { isSafeNumber, parse as parseLossless } from 'lossless-json';
import { scan } from 'secure-json-parse';

// 2^53 has 16 digits: a number token with fewer significant digits (a dot may sit among them) and
// no exponent is read exactly by JSON.parse. A body with a longer digit run or an exponent (1e16 is an
// integer JSON.parse cannot always keep) takes the slower lossless parser.
const MAY_HOLD_UNSAFE_NUMBER = /\d(?:\.?\d){15}|\d[eE]/;
// The parts of a JSON number: sign, integer digits, fraction digits, exponent.
const NUMBER_PARTS = /^(-?)([0-9]+)(?:\.([0-9]+))?(?:[eE]([+-]?[0-9]+))?$/;
// An integer is built only up to 20 digits (every int64 and just beyond): BigInt() of a longer one,
// or of 1e1000000, could be made slow on purpose. Longer ones are out of any range we accept.
const MAX_INTEGER_DIGITS = 20;
const MAY_HOLD_PROTOTYPE_KEY = /"(?:__proto__|constructor)"/;
// What `trim()` keeps (\s is the same set), found without copying the body.
const NOT_BLANK = /\S/;

/**
 * Parses an `application/json` body without losing integers beyond 2^53: those become bigint,
 * safe integers stay numbers. A non-integer that a double cannot hold exactly (9007199254740993.0)
 * becomes NaN, which no field accepts, rather than a rounded value that one would. `__proto__` and
 * `constructor.prototype` keys are dropped, like unknown fields. Anything but a JSON object is a 400.
 */
export function parseJsonBody(raw: Buffer): object | undefined {
  const text = raw.toString('utf8');
  // No body (a DELETE sent with a JSON content type and nothing else, say): the route decides; a
  // route that needs one refuses it in RequestValidationPipe, with the same message as for no body at all.
  if (!NOT_BLANK.test(text)) return undefined;
  let value: unknown;
  try {
    value = MAY_HOLD_UNSAFE_NUMBER.test(text) ? parseLossless(text, undefined, parseNumber) : JSON.parse(text);
  } catch (error) {
    throw new BadRequestException(`Request body is not valid JSON: ${(error as Error).message}`);
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new BadRequestException('Request body must be a JSON object');
  }
  if (MAY_HOLD_PROTOTYPE_KEY.test(text)) scan(value, { protoAction: 'remove', constructorAction: 'remove' });
  return value;
}

/**
 * A number literal as the lossless parser hands it over. An integer (its exact value, however it is
 * written: `12`, `1.2e1`, `12.0`, `-0`) is a number when it is safe, a bigint beyond; a non-integer is
 * a number when a double holds it exactly, NaN otherwise.
 */
function parseNumber(literal: string): number | bigint {
  const integer = integerValue(literal);
  if (integer === undefined) return isSafeNumber(literal) ? Number(literal) : Number.NaN;
  if (typeof integer === 'number') return integer;
  return Number.isSafeInteger(Number(integer)) ? Number(integer) : integer;
}

/** The exact integer a literal spells, `undefined` when it is not one, NaN when it has too many digits. */
function integerValue(literal: string): bigint | number | undefined {
  const parts = NUMBER_PARTS.exec(literal);
  if (parts === null) return undefined;
  const [, sign, whole, fraction = '', exponentText = '0'] = parts;
  const significant = (whole + fraction).replace(/^0+/, '');
  if (significant === '') return 0; // zero in any spelling, -0 included
  const digits = significant.replace(/0+$/, '');
  // The value is digits × 10^exponent; an exponent too long to read is far outside any range.
  const exponent =
    exponentText.length > 9
      ? exponentText.startsWith('-')
        ? -Infinity
        : Infinity
      : Number(exponentText) - fraction.length + (significant.length - digits.length);
  if (exponent < 0) return undefined;
  if (digits.length + exponent > MAX_INTEGER_DIGITS) return Number.NaN;
  return BigInt(`${sign}${digits}${'0'.repeat(exponent)}`);
}
