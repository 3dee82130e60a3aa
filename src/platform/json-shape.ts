/** What one pass over a JSON text found, before it is parsed. */
export interface JsonShape {
  /** Nothing but white space: no body. */
  readonly blank: boolean;
  /** Objects and arrays open deeper than the limit somewhere (the scan stops there). */
  readonly tooDeep: boolean;
  /** Some string holds a backslash escape, so a key may spell `__proto__` in a way no plain search finds. */
  readonly escapes: boolean;
  /**
   * `[start, end)` of each well-formed number literal in a value position that JSON.parse could round
   * (16 digits or more, or an exponent beyond the safe range), or that is over MAX_NUMBER_LENGTH.
   */
  readonly numbers: readonly (readonly [number, number])[];
}

// What `trim()` keeps (\s is the same set), found without copying the body.
const NOT_BLANK = /\S/;
// A JSON number, whole. Anchored, with no nested repetition: linear in the literal.
const JSON_NUMBER = /^-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?$/;
// Below this many digits and without an exponent, JSON.parse reads a number exactly (2^53 has 16 digits).
const EXACT_DIGITS = 15;
/**
 * An int64 has at most 20 characters; with a fraction or an exponent, a few dozen spell one at most.
 * A longer literal is always reported, and read as "not an int64" without being parsed.
 */
export const MAX_NUMBER_LENGTH = 40;
// The smallest normal double: below it, fewer digits are kept.
const MIN_NORMAL = 2 ** -1022;

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_OBJECT = 0x7b;
const CLOSE_OBJECT = 0x7d;
const OPEN_ARRAY = 0x5b;
const CLOSE_ARRAY = 0x5d;
const COLON = 0x3a;
const COMMA = 0x2c;
const MINUS = 0x2d;

/**
 * One linear pass over `text` that tracks strings, nesting and number literals, and never parses
 * anything. Malformed text is not judged here: JSON.parse judges it after, and nothing this scan
 * reports can turn a malformed text into a well-formed one (a number is reported only where a value
 * may stand, and only when it is a whole, valid literal).
 */
export function scanJson(text: string, maxDepth: number): JsonShape {
  if (!NOT_BLANK.test(text)) return { blank: true, tooDeep: false, escapes: false, numbers: [] };
  const numbers: [number, number][] = [];
  // For each open container, whether it is an array; a value may stand after `[`, `:`, or `,` in an array.
  const inArray: boolean[] = [];
  let valueMayStand = true;
  let escapes = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === QUOTE) {
      for (i++; i < text.length; i++) {
        const d = text.charCodeAt(i);
        if (d === QUOTE) break;
        if (d === BACKSLASH) {
          escapes = true;
          i++;
        }
      }
      valueMayStand = false;
    } else if (c === OPEN_OBJECT || c === OPEN_ARRAY) {
      if (inArray.length === maxDepth) return { blank: false, tooDeep: true, escapes, numbers };
      inArray.push(c === OPEN_ARRAY);
      valueMayStand = c === OPEN_ARRAY;
    } else if (c === CLOSE_OBJECT || c === CLOSE_ARRAY) {
      inArray.pop();
      valueMayStand = false;
    } else if (c === COLON) {
      valueMayStand = true;
    } else if (c === COMMA) {
      valueMayStand = inArray[inArray.length - 1] === true;
    } else if (c === MINUS || isDigit(c)) {
      const end = numberEnd(text, i);
      if (valueMayStand && mayBeRounded(text, i, end) && JSON_NUMBER.test(text.slice(i, end))) numbers.push([i, end]);
      i = end - 1;
      valueMayStand = false;
    } else if (!isJsonSpace(c)) {
      valueMayStand = false;
    }
  }
  return { blank: false, tooDeep: false, escapes, numbers };
}

/** The end of the run of number characters (digits, `-`, `+`, `.`, `e`, `E`) that starts at `start`. */
function numberEnd(text: string, start: number): number {
  let end = start + 1;
  for (; end < text.length; end++) {
    const c = text.charCodeAt(end);
    if (!(isDigit(c) || c === MINUS || c === 0x2b || c === 0x2e || c === 0x65 || c === 0x45)) break;
  }
  return end;
}

/**
 * 16 digits or more, or an exponent that takes the value out of the range where a double holds a
 * 15-digit decimal exactly enough (beyond 2^53, or below the normal doubles): JSON.parse could round it.
 */
function mayBeRounded(text: string, start: number, end: number): boolean {
  if (end - start > MAX_NUMBER_LENGTH) return true;
  let digits = 0;
  let exponent = false;
  for (let i = start; i < end; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x65 || c === 0x45) exponent = true;
    else if (!exponent && isDigit(c) && ++digits > EXACT_DIGITS) return true;
  }
  if (!exponent) return false;
  const magnitude = Math.abs(Number(text.slice(start, end)));
  return !(magnitude <= Number.MAX_SAFE_INTEGER && magnitude >= MIN_NORMAL);
}

function isDigit(c: number): boolean {
  return c >= 0x30 && c <= 0x39;
}

function isJsonSpace(c: number): boolean {
  return c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09;
}
