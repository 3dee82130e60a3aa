import { BadRequestException } from '@nestjs/common';
import { isSafeNumber, parse as parseLossless } from 'lossless-json';
import { scan } from 'secure-json-parse';

/** Deeper bodies are refused (API.md, "Request bodies"). */
export const MAX_JSON_DEPTH = 64;
/** An int64 has at most 20 characters; a longer literal (with a fraction or an exponent) is read as NaN, unparsed. */
export const MAX_NUMBER_LENGTH = 40;
// The parts of a JSON number: sign, integer digits, fraction digits, exponent. Anchored and without
// nested repetition, so it is linear in the literal; it runs only on literals of MAX_NUMBER_LENGTH or less.
const NUMBER_PARTS = /^(-?)([0-9]+)(?:\.([0-9]+))?(?:[eE]([+-]?[0-9]+))?$/;
// An integer is built only up to 20 digits (every int64 and just beyond): longer ones are out of any range.
const MAX_INTEGER_DIGITS = 20;
// Up to this many digits without an exponent, JSON.parse reads a number exactly (2^53 has 16 digits).
const EXACT_DIGITS = 15;
// The smallest normal double: below it, fewer digits are kept.
const MIN_NORMAL = 2 ** -1022;
// What `trim()` keeps (\s is the same set), found without copying the body.
const NOT_BLANK = /\S/;
// 2^53 has 16 digits: a number with fewer digits (a dot may sit among them) and no exponent is read
// exactly by JSON.parse. A body with a longer digit run or an exponent anywhere (in a string too) is
// read again by lossless-json, which hands each number literal over as it is written. Each
// alternative reads at most 31 characters from where it starts: linear.
const MAY_HOLD_INEXACT_NUMBER = /[0-9](?:\.?[0-9]){15}|[0-9][eE]/;
// A key that could reach a prototype, also when spelled with escapes: then secure-json-parse's scan.
const MAY_HOLD_PROTOTYPE_KEY = /"(?:__proto__|constructor)"|\\/;
const DUPLICATE_KEY_KEEPS_THE_LAST = { onDuplicateKey: ({ newValue }: { newValue: unknown }) => newValue };

/**
 * Parses an `application/json` body without losing integers beyond 2^53: those become bigint,
 * safe integers stay numbers. A non-integer that a double cannot hold exactly (9007199254740993.0)
 * becomes NaN, which no field accepts, rather than a rounded value that one would; so does any number
 * literal over MAX_NUMBER_LENGTH characters. `__proto__` and `constructor.prototype` keys are dropped,
 * like unknown fields, however they are spelled. Anything but a JSON object is a 400, and so is a body
 * nested deeper than MAX_JSON_DEPTH. The last of repeated keys wins.
 *
 * The stock parsers, linear whatever the body holds: JSON.parse (which judges the syntax, and
 * reads every body whose numbers it reads exactly), then for a body that may hold a number JSON.parse
 * rounds, lossless-json, with each literal read exactly here (`parseNumber`); secure-json-parse's
 * scan drops the prototype keys.
 */
export function parseJsonBody(raw: Buffer): object | undefined {
  const text = raw.toString('utf8');
  // No body (a DELETE sent with a JSON content type and nothing else, say): the route decides; a
  // route that needs one refuses it in RequestValidationPipe, with the same message as for no body at all.
  if (!NOT_BLANK.test(text)) return undefined;
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    // A malformed body is refused for its depth first, as a well-formed one is (1 MiB of `[` is both).
    if (opensDeeperThan(text, MAX_JSON_DEPTH)) throw tooDeep();
    throw new BadRequestException(`Request body is not valid JSON: ${(error as Error).message}`);
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new BadRequestException('Request body must be a JSON object');
  }
  if (isDeeperThan(value, MAX_JSON_DEPTH)) throw tooDeep();
  // Within the depth limit, so lossless-json's recursion is bounded too.
  if (MAY_HOLD_INEXACT_NUMBER.test(text))
    value = parseLossless(text, undefined, { parseNumber, ...DUPLICATE_KEY_KEEPS_THE_LAST });
  if (MAY_HOLD_PROTOTYPE_KEY.test(text)) scan(value as object, { protoAction: 'remove', constructorAction: 'remove' });
  return value as object;
}

function tooDeep(): BadRequestException {
  return new BadRequestException(`Request body is nested deeper than ${MAX_JSON_DEPTH} levels`);
}

/**
 * Whether a text JSON.parse refused opens objects and arrays deeper than `limit` somewhere, outside
 * strings: one pass, only on the error path.
 */
function opensDeeperThan(text: string, limit: number): boolean {
  let depth = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (c === '"') {
      for (i++; i < text.length && text[i] !== '"'; i++) if (text[i] === '\\') i++;
    } else if (c === '[' || c === '{') {
      if (++depth > limit) return true;
    } else if (c === ']' || c === '}') {
      depth--;
    }
  }
  return false;
}

/** Whether objects and arrays nest deeper than `limit` (the body itself is level 1); no recursion. */
function isDeeperThan(root: object, limit: number): boolean {
  const pending: [unknown, number][] = [[root, 1]];
  for (let next = pending.pop(); next !== undefined; next = pending.pop()) {
    const [value, depth] = next;
    if (typeof value !== 'object' || value === null) continue;
    if (depth > limit) return true;
    for (const child of Object.values(value))
      if (typeof child === 'object' && child !== null) pending.push([child, depth + 1]);
  }
  return false;
}

/**
 * A number literal as lossless-json hands it over (valid JSON: JSON.parse has read the body). An integer (its exact value, however it is
 * written: `12`, `1.2e1`, `12.0`, `-0`) is a number when it is safe, a bigint beyond; a non-integer
 * is a number when a double holds it exactly; NaN otherwise.
 */
function parseNumber(literal: string): number | bigint {
  if (literal.length > MAX_NUMBER_LENGTH) return Number.NaN;
  if (readExactly(literal)) return Number(literal);
  const integer = integerValue(literal);
  if (integer === undefined) return isSafeNumber(literal) ? Number(literal) : Number.NaN;
  if (typeof integer === 'number') return integer;
  return Number.isSafeInteger(Number(integer)) ? Number(integer) : integer;
}

/**
 * Whether JSON.parse reads the literal as its value: 15 digits or fewer, and no exponent that takes
 * the value beyond 2^53 or below the normal doubles. Such a literal keeps JSON.parse's value whichever
 * parser reads the body (-0 stays -0).
 */
function readExactly(literal: string): boolean {
  const exponentAt = literal.search(/[eE]/);
  const mantissa = exponentAt < 0 ? literal : literal.slice(0, exponentAt);
  let digits = 0;
  for (let i = 0; i < mantissa.length; i++)
    if (mantissa.charCodeAt(i) >= 0x30 && mantissa.charCodeAt(i) <= 0x39) digits++;
  if (digits > EXACT_DIGITS) return false;
  if (exponentAt < 0) return true;
  const magnitude = Math.abs(Number(literal));
  return magnitude <= Number.MAX_SAFE_INTEGER && magnitude >= MIN_NORMAL;
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
