import { BadRequestException } from '@nestjs/common';
import { isInteger, isSafeNumber, parse as parseLossless } from 'lossless-json';
import { scan } from 'secure-json-parse';

// 2^53 has 16 digits: a number token with fewer significant digits (a dot may sit among them) is
// read exactly by JSON.parse. Only a body with a longer digit run takes the slower lossless parser.
const MAY_HOLD_UNSAFE_NUMBER = /\d(?:\.?\d){15}/;
// The longest int64 literal is 20 characters; BigInt() of a longer one could be made slow on purpose.
const MAX_INTEGER_LITERAL = 20;
const MAY_HOLD_PROTOTYPE_KEY = /"(?:__proto__|constructor)"/;
// What `trim()` keeps (\s is the same set), found without copying the body.
const NOT_BLANK = /\S/;

/**
 * Parses an `application/json` body without losing integers beyond 2^53: those become bigint,
 * safe integers stay numbers. A non-integer that a double cannot hold exactly (9007199254740993.0)
 * becomes NaN, which no field accepts, rather than a rounded value that one would. `__proto__` and
 * `constructor.prototype` keys are dropped, like unknown fields. Anything but a JSON object is a 400.
 */
export function parseJsonBody(raw: Buffer): object {
  const text = raw.toString('utf8');
  if (!NOT_BLANK.test(text)) throw new BadRequestException('Request body is required: send a JSON object');
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

function parseNumber(literal: string): number | bigint {
  if (isInteger(literal) && literal.length <= MAX_INTEGER_LITERAL) {
    const value = Number(literal);
    return Number.isSafeInteger(value) ? value : BigInt(literal);
  }
  return isSafeNumber(literal) ? Number(literal) : Number.NaN;
}
