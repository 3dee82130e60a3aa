import { randomBytes } from 'node:crypto';
import { BadRequestException } from '@nestjs/common';
import { isSafeNumber } from 'lossless-json';
import { scan } from 'secure-json-parse';
import { JsonShape, MAX_NUMBER_LENGTH, scanJson } from './json-shape';

/** Deeper bodies are refused before they are parsed (CONTRACT: "Request bodies"). */
export const MAX_JSON_DEPTH = 64;
// The parts of a JSON number: sign, integer digits, fraction digits, exponent. Anchored and without
// nested repetition, so it is linear in the literal; it runs only on literals of MAX_NUMBER_LENGTH or less.
const NUMBER_PARTS = /^(-?)([0-9]+)(?:\.([0-9]+))?(?:[eE]([+-]?[0-9]+))?$/;
// An integer is built only up to 20 digits (every int64 and just beyond): longer ones are out of any range.
const MAX_INTEGER_DIGITS = 20;
const MAY_HOLD_PROTOTYPE_KEY = /"(?:__proto__|constructor)"/;
// Numbers JSON.parse could round are handed over as strings with this per-process prefix, then
// replaced by their exact value; a client would have to guess 128 random bits to forge one.
const NUMBER_MARK = `#number-${randomBytes(16).toString('hex')}:`;

/**
 * Parses an `application/json` body without losing integers beyond 2^53: those become bigint,
 * safe integers stay numbers. A non-integer that a double cannot hold exactly (9007199254740993.0)
 * becomes NaN, which no field accepts, rather than a rounded value that one would; so does any number
 * literal over MAX_NUMBER_LENGTH characters. `__proto__` and `constructor.prototype` keys are dropped,
 * like unknown fields, however they are spelled. Anything but a JSON object is a 400, and so is a body
 * nested deeper than MAX_JSON_DEPTH.
 *
 * Linear in the body whatever it holds: one pass finds the structure (`scanJson`), then JSON.parse,
 * which keeps the last of repeated keys; the rare long numbers are replaced by marks before it runs.
 */
export function parseJsonBody(raw: Buffer): object | undefined {
  const text = raw.toString('utf8');
  const shape = scanJson(text, MAX_JSON_DEPTH);
  // No body (a DELETE sent with a JSON content type and nothing else, say): the route decides; a
  // route that needs one refuses it in RequestValidationPipe, with the same message as for no body at all.
  if (shape.blank) return undefined;
  if (shape.tooDeep) throw new BadRequestException(`Request body is nested deeper than ${MAX_JSON_DEPTH} levels`);
  const value = shape.numbers.length === 0 ? parseText(text) : parseMarked(text, shape);
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new BadRequestException('Request body must be a JSON object');
  }
  if (shape.escapes || MAY_HOLD_PROTOTYPE_KEY.test(text)) {
    scan(value, { protoAction: 'remove', constructorAction: 'remove' });
  }
  // JSON.parse makes every key an own property; a body that has another prototype came from elsewhere.
  if (Object.getPrototypeOf(value) !== Object.prototype)
    throw new BadRequestException('Request body is not valid JSON');
  return value;
}

function parseText(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new BadRequestException(`Request body is not valid JSON: ${(error as Error).message}`);
  }
}

/** JSON.parse of the body with each number that needs care written as a marked string, then read exactly. */
function parseMarked(text: string, shape: JsonShape): unknown {
  const parts: string[] = [];
  const exact: (number | bigint)[] = [];
  let from = 0;
  for (const [start, end] of shape.numbers) {
    parts.push(text.slice(from, start), `"${NUMBER_MARK}${exact.length}"`);
    exact.push(parseNumber(text.slice(start, end)));
    from = end;
  }
  parts.push(text.slice(from));
  try {
    return JSON.parse(parts.join(''), (_key, value: unknown) =>
      typeof value === 'string' && value.startsWith(NUMBER_MARK)
        ? exact[Number(value.slice(NUMBER_MARK.length))]
        : value,
    );
  } catch (error) {
    // The marks moved the positions: the message of the body as it came names the right place.
    parseText(text);
    throw new BadRequestException(`Request body is not valid JSON: ${(error as Error).message}`);
  }
}

/**
 * A number literal (valid JSON, checked by the scan). An integer (its exact value, however it is
 * written: `12`, `1.2e1`, `12.0`, `-0`) is a number when it is safe, a bigint beyond; a non-integer
 * is a number when a double holds it exactly; NaN otherwise.
 */
function parseNumber(literal: string): number | bigint {
  if (literal.length > MAX_NUMBER_LENGTH) return Number.NaN;
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
  const digits = withoutTrailingZeros(significant);
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

/** `digits` without its trailing zeros, in one pass from the end (`/0+$/` backtracks quadratically). */
function withoutTrailingZeros(digits: string): string {
  let end = digits.length;
  while (end > 0 && digits.charCodeAt(end - 1) === 0x30) end--;
  return digits.slice(0, end);
}
