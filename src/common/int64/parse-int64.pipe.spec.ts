import { ArgumentMetadata, BadRequestException } from '@nestjs/common';
import { ParseInt64Pipe, parseDecimalInt64 } from './parse-int64.pipe';

const ID: ArgumentMetadata = { type: 'param', data: 'id' };

describe('ParseInt64Pipe', () => {
  const pipe = new ParseInt64Pipe();

  describe('when the value is a decimal int64', () => {
    it.each([
      ['0', 0n],
      ['-0', 0n],
      ['42', 42n],
      ['007', 7n],
      ['9007199254740993', 9007199254740993n],
      ['9223372036854775807', 9223372036854775807n],
      ['-9223372036854775808', -9223372036854775808n],
    ])('should turn %j into exactly %s', (text, expected) => {
      expect(pipe.transform(text, ID)).toBe(expected);
    });
  });

  describe('when the value is anything else', () => {
    it.each([
      'abc',
      '',
      '1.5',
      '1e3',
      '0x10',
      '+1',
      ' 1',
      '1 ',
      '--1',
      '1_000',
      '9223372036854775808',
      '-9223372036854775809',
      '1'.repeat(40),
      '١٢',
    ])('should answer 400 naming the parameter for %j', (text) => {
      expect(() => pipe.transform(text, ID)).toThrow(
        new BadRequestException('id must be a decimal integer in the int64 range'),
      );
    });

    it.each([[['1', '2']], [undefined], [1]])('should answer 400 for the non-string %j', (value) => {
      expect(() => pipe.transform(value, { type: 'query', data: 'after' })).toThrow(
        'after must be a decimal integer in the int64 range',
      );
    });
  });

  it('should never hand out a number, so nothing is rounded', () => {
    expect(typeof parseDecimalInt64('9007199254740993')).toBe('bigint');
  });
});
