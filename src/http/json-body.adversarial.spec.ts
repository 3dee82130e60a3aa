import { DEFAULT_BODY_LIMIT } from '../config/load-config';
import { MAX_NUMBER_LENGTH, parseJsonBody } from './json-body.parser';

/**
 * What one parse costs, counted rather than timed, in steps: a character read one at a time
 * (charCodeAt: lossless-json, the literal checks), the string a search may read whole (a regex run:
 * test, search, replace and match all go through `exec`; indexOf and the like; JSON.parse), the
 * characters a copy takes, the nodes a tree walk visits (the depth check, secure-json-parse's scan).
 * A pass started once per literal, or a regex run on a long literal, shows as steps growing faster
 * than the body.
 */
interface Work {
  outcome: unknown;
  steps: number;
  /** The longest input of a regex run on anything but the whole body (a literal, a key). */
  longestPartRegexInput: number;
}

type Charge = (self: unknown, args: unknown[], result: unknown) => number;
const length = (value: unknown) => (typeof value === 'string' || Array.isArray(value) ? value.length : 0);
const whole: Charge = (self) => length(self);
const copied: Charge = (_self, _args, result) => length(result);
const METERED: [object, string, Charge][] = [
  [String.prototype, 'charCodeAt', () => 1],
  [String.prototype, 'indexOf', whole],
  [String.prototype, 'lastIndexOf', whole],
  [String.prototype, 'includes', whole],
  [String.prototype, 'split', whole],
  [String.prototype, 'trim', whole],
  [String.prototype, 'slice', copied],
  [String.prototype, 'substring', copied],
  [RegExp.prototype, 'exec', (_self, [input]) => length(input)],
  [JSON, 'parse', (_self, [text]) => length(text)],
  [Object, 'values', (_self, _args, result) => 1 + length(result)],
  [Object.prototype, 'hasOwnProperty', () => 1],
];

function countWork(body: string): Work {
  const raw = Buffer.from(body, 'utf8');
  const work: Work = { outcome: undefined, steps: 0, longestPartRegexInput: 0 };
  const originals = METERED.map(([target, name]) => (target as Record<string, unknown>)[name] as () => unknown);
  METERED.forEach(([target, name, charge], i) => {
    (target as Record<string, unknown>)[name] = function (this: unknown, ...args: unknown[]): unknown {
      const result: unknown = Reflect.apply(originals[i], this, args);
      work.steps += charge(this, args, result);
      if (target === RegExp.prototype && args[0] !== body)
        work.longestPartRegexInput = Math.max(work.longestPartRegexInput, length(args[0]));
      return result;
    };
  });
  try {
    work.outcome = parseJsonBody(raw);
  } catch (error) {
    work.outcome = error;
  } finally {
    METERED.forEach(([target, name], i) => ((target as Record<string, unknown>)[name] = originals[i]));
  }
  return work;
}

/** `head`, then `fill` as often as fits, then `tail`: at most `limit` bytes (all ASCII). */
function pad(head: string, fill: string, tail: string, limit: number): string {
  const room = limit - head.length - tail.length;
  return head + fill.repeat(Math.floor(room / fill.length)) + tail;
}

// Long digit runs in every position a number can take (and some it cannot), deep nesting, and keys
// that spell __proto__ with escapes; each body is built at a given size.
const CORPUS: [string, (limit: number) => string][] = [
  [
    'zeros that do not end the literal, in an unknown field (the reported one)',
    (limit) => pad('{"id":1,"name":"a","x":1', '0', '1}', limit),
  ],
  ['zeros that do not end the literal, in id', (limit) => pad('{"name":"a","id":1', '0', '1}', limit)],
  ['zeros ending the literal', (limit) => pad('{"name":"a","id":1', '0', '}', limit)],
  ['a negative run', (limit) => pad('{"name":"a","id":-9', '9', '}', limit)],
  ['a long fraction', (limit) => pad('{"name":"a","id":1.', '0', '1}', limit)],
  ['a long exponent', (limit) => pad('{"name":"a","id":1e', '0', '1}', limit)],
  ['a long negative exponent', (limit) => pad('{"name":"a","id":1e-', '9', '}', limit)],
  ['leading zeros (not a literal)', (limit) => pad('{"name":"a","id":0', '0', '1}', limit)],
  ['a run where a key stands', (limit) => pad('{', '1', ':1}', limit)],
  ['a run as the whole body', (limit) => pad('', '7', '', limit)],
  ['an unterminated run', (limit) => pad('{"name":"a","id":1', '0', '', limit)],
  ['a run inside a string', (limit) => pad('{"name":"', '0', '","id":1}', limit)],
  ['many 16-digit numbers in an array', (limit) => pad('{"name":"a","id":1,"x":[', '9007199254740993,', '1]}', limit)],
  ['many 15-digit numbers in an array', (limit) => pad('{"name":"a","id":1,"x":[', '900719925474099,', '1]}', limit)],
  ['many exponents in an array', (limit) => pad('{"name":"a","id":1,"x":[', '1e5,', '1]}', limit)],
  ['digits and dots alternating', (limit) => pad('{"name":"a","id":1', '.0', '}', limit)],
  ['digits and minus signs alternating', (limit) => pad('{"name":"a","id":1', '-1', '}', limit)],
  ['arrays opened and never closed', (limit) => pad('{"id":1,"x":', '[', '', limit)],
  ['objects opened and never closed', (limit) => pad('{"id":1,"x":', '{"a":', '', limit)],
  [
    'nesting 64 deep, again and again',
    (limit) => pad('{"id":1,"name":"a","x":[', `${'['.repeat(62)}${']'.repeat(62)},`, '1]}', limit),
  ],
  [
    'escaped __proto__ keys, side by side',
    (limit) => pad('{"id":1,"name":"a",', '"\\u005f_proto__":{"x":1},', '"y":1}', limit),
  ],
  [
    'escaped __proto__ keys in many objects',
    (limit) => pad('{"id":1,"name":"a","x":[', '{"\\u005f_proto__":{"x":1}},', '1]}', limit),
  ],
  [
    'escaped constructor.prototype keys',
    (limit) => pad('{"id":1,"name":"a","x":[', '{"constructor":{"prototype":{}}},', '1]}', limit),
  ],
  ['backslashes in a string', (limit) => pad('{"id":1,"name":"', '\\\\', '"}', limit)],
  ['one duplicate key, many times', (limit) => pad('{"name":"a",', '"id":9007199254740993,', '"id":1}', limit)],
];

// The body is read a fixed number of times (the sieves, JSON.parse, lossless-json's read a character)
// and each number literal of at most MAX_NUMBER_LENGTH characters a few times more: 12.3 steps a byte
// at most today, for 16-digit numbers. The quadratic parser read a digit run once per digit.
const MAX_STEPS_PER_BYTE = 16;

describe('parseJsonBody against a generated adversarial corpus', () => {
  describe.each(CORPUS)('given %s', (_name, build) => {
    const full = build(DEFAULT_BODY_LIMIT);
    const half = build(DEFAULT_BODY_LIMIT / 2);
    let work: Work;
    beforeAll(() => {
      work = countWork(full);
    });

    it('should fill the default body limit', () => {
      expect(full.length).toBeGreaterThan(DEFAULT_BODY_LIMIT - 64);
      expect(full.length).toBeLessThanOrEqual(DEFAULT_BODY_LIMIT);
    });

    it('should answer a 400 or a plain object: never a stack overflow, never another prototype', () => {
      if (work.outcome instanceof Error) expect(work.outcome).toMatchObject({ status: 400 });
      else expect(Object.getPrototypeOf(work.outcome)).toBe(Object.prototype);
    });

    it(`should take at most ${MAX_STEPS_PER_BYTE} steps a byte`, () => {
      expect(work.steps).toBeLessThanOrEqual(MAX_STEPS_PER_BYTE * full.length);
    });

    it('should take at most twice the steps for twice the body', () => {
      // pad() rounds the fill down: the full body may be a few bytes more than twice the half one.
      expect(work.steps / full.length).toBeLessThanOrEqual(countWork(half).steps / half.length + 0.01);
    });

    it('should run regexes on the whole body or on at most a literal: backtracking costs a constant there', () => {
      expect(work.longestPartRegexInput).toBeLessThanOrEqual(MAX_NUMBER_LENGTH);
    });
  });

  it('should read the reported body as a valid plant with the long field ignored as NaN', () => {
    const value = parseJsonBody(Buffer.from(CORPUS[0][1](DEFAULT_BODY_LIMIT))) as Record<string, unknown>;
    expect(value).toEqual({ id: 1, name: 'a', x: Number.NaN });
  });

  it('should read a long id as NaN, which no id accepts', () => {
    const value = parseJsonBody(Buffer.from(CORPUS[1][1](DEFAULT_BODY_LIMIT))) as Record<string, unknown>;
    expect(value.id).toBeNaN();
  });
});
