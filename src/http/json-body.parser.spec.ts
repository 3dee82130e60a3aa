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

  describe('when a number cannot be held exactly', () => {
    it.each(['9007199254740993.0', '1.00000000000000001', '1' + '0'.repeat(30)])(
      'should turn %s into NaN rather than a rounded value',
      (literal) => {
        expect(parse(`{"id":${literal}}`).id).toBeNaN();
      },
    );

    it('should read short decimals on the fast path as usual', () => {
      expect(parse('{"id":1.5,"big":1e300}')).toEqual({ id: 1.5, big: 1e300 });
    });
  });

  describe('when the body is not a JSON object', () => {
    it.each([
      ['', 'Request body is required: send a JSON object'],
      ['  \n', 'Request body is required: send a JSON object'],
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

  it('should drop __proto__ and constructor.prototype keys', () => {
    const value = parse('{"__proto__":{"x":1},"constructor":{"prototype":{"y":2}},"id":1}');
    expect(Object.getPrototypeOf(value)).toBe(Object.prototype);
    expect(Object.keys(value)).toEqual(['id']);
    expect(value.constructor).toBe(Object);
  });
});
