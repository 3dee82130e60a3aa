import { DEFAULT_BODY_LIMIT } from '../config/load-config';
import { parseJsonBody } from './json-body.parser';

// Far above what a linear parse of 1 MiB takes (5-500 ms of CPU on a quiet machine), far below what
// the quadratic one took (7.9 s for 100 KB, minutes for 1 MiB). Counted in CPU time, not wall-clock
// time; but the process's CPU time includes V8's GC threads, which a loaded machine makes dearer (the
// 64-deep nesting, ~300 ms alone, took 1.66 s of it beside the whole suite), so the bound leaves room.
const GENEROUS_BOUND_MS = 5000;

/** CPU milliseconds this process has spent so far (user and system). */
function cpuMs(): number {
  const { user, system } = process.cpuUsage();
  return (user + system) / 1000;
}

/** `head`, then `fill` as often as fits, then `tail`: at most `DEFAULT_BODY_LIMIT` bytes (all ASCII). */
function pad(head: string, fill: string, tail: string): string {
  const room = DEFAULT_BODY_LIMIT - head.length - tail.length;
  return head + fill.repeat(Math.floor(room / fill.length)) + tail;
}

// Each body is generated at the full default BODY_LIMIT (1 MiB): long digit runs in every position a
// number can take (and some it cannot), deep nesting, and keys that spell __proto__ with escapes.
const CORPUS: [string, string][] = [
  [
    'zeros that do not end the literal, in an unknown field (the reported one)',
    pad('{"id":1,"name":"a","x":1', '0', '1}'),
  ],
  ['zeros that do not end the literal, in id', pad('{"name":"a","id":1', '0', '1}')],
  ['zeros ending the literal', pad('{"name":"a","id":1', '0', '}')],
  ['a negative run', pad('{"name":"a","id":-9', '9', '}')],
  ['a long fraction', pad('{"name":"a","id":1.', '0', '1}')],
  ['a long exponent', pad('{"name":"a","id":1e', '0', '1}')],
  ['a long negative exponent', pad('{"name":"a","id":1e-', '9', '}')],
  ['leading zeros (not a literal)', pad('{"name":"a","id":0', '0', '1}')],
  ['a run where a key stands', pad('{', '1', ':1}')],
  ['a run as the whole body', pad('', '7', '')],
  ['an unterminated run', pad('{"name":"a","id":1', '0', '')],
  ['a run inside a string', pad('{"name":"', '0', '","id":1}')],
  ['many 16-digit numbers in an array', pad('{"name":"a","id":1,"x":[', '9007199254740993,', '1]}')],
  ['many 15-digit numbers in an array', pad('{"name":"a","id":1,"x":[', '900719925474099,', '1]}')],
  ['many exponents in an array', pad('{"name":"a","id":1,"x":[', '1e5,', '1]}')],
  ['digits and dots alternating', pad('{"name":"a","id":1', '.0', '}')],
  ['digits and minus signs alternating', pad('{"name":"a","id":1', '-1', '}')],
  ['arrays opened and never closed', pad('{"id":1,"x":', '[', '')],
  ['objects opened and never closed', pad('{"id":1,"x":', '{"a":', '')],
  ['nesting 64 deep, again and again', pad('{"id":1,"name":"a","x":[', `${'['.repeat(62)}${']'.repeat(62)},`, '1]}')],
  ['escaped __proto__ keys, side by side', pad('{"id":1,"name":"a",', '"\\u005f_proto__":{"x":1},', '"y":1}')],
  ['escaped __proto__ keys in many objects', pad('{"id":1,"name":"a","x":[', '{"\\u005f_proto__":{"x":1}},', '1]}')],
  ['escaped constructor.prototype keys', pad('{"id":1,"name":"a","x":[', '{"constructor":{"prototype":{}}},', '1]}')],
  ['backslashes in a string', pad('{"id":1,"name":"', '\\\\', '"}')],
  ['one duplicate key, many times', pad('{"name":"a",', '"id":9007199254740993,', '"id":1}')],
];

describe('parseJsonBody against a generated adversarial corpus', () => {
  it.each(CORPUS)('should answer %s within the bound', (_name, body) => {
    const raw = Buffer.from(body, 'utf8');
    expect(raw.length).toBeGreaterThan(DEFAULT_BODY_LIMIT - 64);
    expect(raw.length).toBeLessThanOrEqual(DEFAULT_BODY_LIMIT);
    const started = cpuMs();
    let outcome: unknown;
    try {
      outcome = parseJsonBody(raw);
    } catch (error) {
      outcome = error;
    }
    expect(cpuMs() - started).toBeLessThan(GENEROUS_BOUND_MS);
    // Either a 400 or a plain object: never a stack overflow, never another prototype.
    if (outcome instanceof Error) expect(outcome).toMatchObject({ status: 400 });
    else expect(Object.getPrototypeOf(outcome)).toBe(Object.prototype);
  });

  it('should read the reported body as a valid plant with the long field ignored as NaN', () => {
    const value = parseJsonBody(Buffer.from(CORPUS[0][1])) as Record<string, unknown>;
    expect(value).toEqual({ id: 1, name: 'a', x: Number.NaN });
  });

  it('should read a long id as NaN, which no id accepts', () => {
    const value = parseJsonBody(Buffer.from(CORPUS[1][1])) as Record<string, unknown>;
    expect(value.id).toBeNaN();
  });
});
