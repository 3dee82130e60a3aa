import { exactJson } from './support/create-once-contract';

// The create-once contract compares answers as values (`exactJson`): free in the fields' order,
// exact in an int64's digits.
describe('exactJson', () => {
  const MAX = '{"id":9223372036854775807,"name":"Fern","count":3}';

  it('should read two texts with the same fields in another order as equal values', () => {
    expect(exactJson('{"count":3,"name":"Fern","id":9223372036854775807}')).toEqual(exactJson(MAX));
  });

  it.each([
    ['rounded to its double', '{"id":9223372036854775808,"name":"Fern","count":3}'],
    ['written as a string', '{"id":"9223372036854775807","name":"Fern","count":3}'],
    ['written in a double form', '{"id":9.223372036854776e18,"name":"Fern","count":3}'],
    ['with a field more', '{"id":9223372036854775807,"name":"Fern","count":3,"tag":null}'],
    ['with a number as a string', '{"id":9223372036854775807,"name":"Fern","count":"3"}'],
  ])('should tell an int64 answer from one %s', (_label, text) => {
    expect(exactJson(text)).not.toEqual(exactJson(MAX));
  });
});
