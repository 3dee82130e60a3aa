import { BadRequestException } from '@nestjs/common';
import { parseJsonBody } from './json-body.parser';

const parse = (text: string) => parseJsonBody(Buffer.from(text, 'utf8')) as Record<string, unknown>;

describe('parseJsonBody', () => {
  describe('when integers are beyond 2^53', () => {
    it.each([
      ['9007199254740993', 9007199254740993n],
      ['9223372036854775807', 9223372036854775807n],
      ['-9223372036854775808', -9223372036854775808n],
      ['12345678901234567890', 12345678901234567890n],
    ])('should keep %s exactly as a bigint', (literal, expected) => {
      expect(parse(`{"id":${literal}}`).id).toBe(expected);
    });

    it('should keep safe integers as numbers, also in the lossless path', () => {
      expect(parse('{"id":9007199254740993,"n":7,"f":1.25}')).toEqual({ id: 9007199254740993n, n: 7, f: 1.25 });
    });

    it('should keep ids exact inside nested values and with surrounding unicode', () => {
      expect(parse('{"name":"🌿","x":{"y":[18446744073709551615]}}')).toEqual({
        name: '🌿',
        x: { y: [18446744073709551615n] },
      });
    });
  });

  describe('when an integer is written with a fraction or an exponent', () => {
    it.each([
      ['1e15', 1e15],
      ['1e16', 10n ** 16n],
      ['1e17', 10n ** 17n],
      ['1e18', 10n ** 18n],
      ['1E2', 100],
      ['1.5e1', 15],
      ['10e-1', 1],
      ['9007199254740991e0', 9007199254740991],
      ['9.007199254740992e15', 9007199254740992n],
      ['9.007199254740993e15', 9007199254740993n],
      ['900719925474099.3e1', 9007199254740993n],
      ['9007199254740993.0', 9007199254740993n],
      ['9.223372036854775807e18', 9223372036854775807n],
      ['-9.223372036854775808e18', -9223372036854775808n],
      ['9.223372036854775808e18', 9223372036854775808n],
      ['-0.0e5', 0],
    ])('should read %s as its exact value %s', (literal, expected) => {
      expect(parse(`{"id":${literal}}`).id).toBe(expected);
    });

    it('should read -0 the same way whatever else the body holds', () => {
      expect(parse('{"id":-0}').id).toBe(-0);
      expect(parse('{"id":-0,"big":1e16}').id).toBe(-0);
    });
  });

  describe('when a number cannot be held exactly', () => {
    it.each(['1.00000000000000001', '1' + '0'.repeat(30), '1e21', '1e300', '1e99999999999999', '1e-99999999999999'])(
      'should turn %s into NaN rather than a rounded value',
      (literal) => {
        expect(parse(`{"id":${literal}}`).id).toBeNaN();
      },
    );

    it('should keep fractions a double holds exactly as numbers', () => {
      expect(parse('{"id":1.5,"small":1e-1}')).toEqual({ id: 1.5, small: 0.1 });
    });
  });

  describe('when there is no body', () => {
    it.each(['', '  \n'])('should hand over no value for %j, for the route to require one or not', (text) => {
      expect(parseJsonBody(Buffer.from(text, 'utf8'))).toBeUndefined();
    });
  });

  describe('when the body is not a JSON object', () => {
    it.each([
      ['[]', 'Request body must be a JSON object'],
      ['null', 'Request body must be a JSON object'],
      ['"text"', 'Request body must be a JSON object'],
      ['12345678901234567890', 'Request body must be a JSON object'],
    ])('should reject %j with a 400', (text, message) => {
      expect(() => parse(text)).toThrow(new BadRequestException(message));
    });

    it.each(['{"id":', '{"id":12345678901234567890', "{'id':1}", '{"id":1}}'])('should reject malformed %s', (text) => {
      expect(() => parse(text)).toThrow(/^Request body is not valid JSON: /);
    });
  });

  describe('when a key could reach a prototype', () => {
    it.each([
      '{"__proto__":{"x":1},"constructor":{"prototype":{"y":2}},"id":1}',
      '{"\\u005f_proto__":{"x":1},"\\u0063onstructor":{"prototype":{"y":2}},"id":1}',
      '{"\\u005f_proto__":{"x":1},"id":9007199254740993}',
      '{"a":{"__prot\\u006f__":{"x":1}},"id":1}',
    ])('should drop it, however it is spelled: %s', (text) => {
      const value = parse(text);
      expect(Object.getPrototypeOf(value)).toBe(Object.prototype);
      expect(Object.keys(value)).toEqual(text.includes('"a"') ? ['a', 'id'] : ['id']);
      expect(value.constructor).toBe(Object);
      expect(({} as Record<string, unknown>).x).toBeUndefined();
    });
  });

  describe('when a key is repeated', () => {
    it.each([
      ['{"id":1,"name":"a","id":2}', 2],
      ['{"id":9007199254740993,"name":"a","id":2}', 2],
      ['{"id":2,"name":"a","id":9007199254740993}', 9007199254740993n],
      ['{"id":1,"big":1e16,"id":3}', 3],
    ])('should keep the last value, as JSON.parse does, on every path: %s', (text, id) => {
      expect(parse(text).id).toBe(id);
    });
  });

  describe('when a number literal is far too long to be an int64', () => {
    it.each([
      '1' + '0'.repeat(40),
      '-1' + '0'.repeat(100) + '1',
      '0.' + '0'.repeat(50) + '1',
      '1e' + '0'.repeat(60) + '1',
    ])('should read %s as NaN without parsing it further', (literal) => {
      expect(parse(`{"id":${literal}}`).id).toBeNaN();
    });

    it('should still refuse a long run that is not a valid literal', () => {
      expect(() => parse(`{"id":01${'0'.repeat(100)}}`)).toThrow(/^Request body is not valid JSON: /);
    });

    it('should never turn a number where a key stands into a key', () => {
      expect(() => parse('{12345678901234567890:1}')).toThrow(/^Request body is not valid JSON: /);
    });
  });

  describe('when the body is nested deeply', () => {
    const nested = (depth: number) => `{"id":1,"x":${'['.repeat(depth - 1)}${']'.repeat(depth - 1)}}`;

    it('should accept 64 levels', () => {
      expect(parse(nested(64)).id).toBe(1);
    });

    it.each([65, 100_000])('should refuse %s levels with a 400', (depth) => {
      expect(() => parse(nested(depth))).toThrow(
        new BadRequestException('Request body is nested deeper than 64 levels'),
      );
    });

    it('should not count brackets inside strings', () => {
      expect(parse(`{"id":1,"name":"${'['.repeat(1000)}\\"{{"}`).id).toBe(1);
    });

    it('should refuse a malformed body for its depth first, and otherwise for its syntax', () => {
      expect(() => parse(`{"id":1,"x":${'['.repeat(100_000)}`)).toThrow(
        new BadRequestException('Request body is nested deeper than 64 levels'),
      );
      expect(() => parse(`{"id":1,"x":"${'['.repeat(1000)}",`)).toThrow(/^Request body is not valid JSON: /);
    });
  });

  // The parser is JSON.parse wherever JSON.parse reads every number exactly: a generated corpus of
  // such bodies (nested values, repeated keys, escapes, unicode) holds it to JSON.parse's answer.
  it('should answer as JSON.parse for bodies whose numbers JSON.parse reads exactly', () => {
    let state = 20261125;
    const random = () => {
      state = (state * 1103515245 + 12345) % 2 ** 31;
      return state / 2 ** 31;
    };
    const pick = <T>(values: readonly T[]): T => values[Math.floor(random() * values.length)];
    const scalar = (): string =>
      pick([
        () => String(Math.floor(random() * 1e15) * pick([1, -1])),
        () => String(Math.round(random() * 1e6) / 100),
        () => JSON.stringify(pick(['', 'a', 'é🌿', '\\"', '\u0000', 'x'.repeat(50)])),
        () => pick(['true', 'false', 'null', '-0', '0.5', '1e5', '2.5E-3']),
      ])();
    const value = (depth: number): string => {
      if (depth > 3 || random() < 0.5) return scalar();
      const size = Math.floor(random() * 4);
      if (random() < 0.5) return `[${Array.from({ length: size }, () => value(depth + 1)).join(',')}]`;
      return `{${Array.from({ length: size }, () => `"${pick(['id', 'name', 'k', 'k'])}":${value(depth + 1)}`).join(',')}}`;
    };
    for (let index = 0; index < 2000; index++) {
      const text = `{"name":${scalar()},"k":${value(1)},"k":${value(1)}}`;
      expect({ text, value: parse(text) }).toEqual({ text, value: JSON.parse(text) as unknown });
    }
  });
});
