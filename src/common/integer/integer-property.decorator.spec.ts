import { bodyValidation, documentedSchema } from '../../../test/support/body-validation';
import { Int64Property } from '../int64/int64-property.decorator';
import { IntegerProperty } from './integer-property.decorator';

class NewCrate {
  @Int64Property()
  id!: bigint;

  @IntegerProperty({ min: 1, max: 10000 })
  count!: number;

  @IntegerProperty({ min: -5, max: 5, optional: true })
  tilt?: number;
}

const COUNT = 'count must be an integer between 1 and 10000';

describe.each(['compiled', 'stock'] as const)('IntegerProperty with the %s pipe', (mode) => {
  const { validate, messageFor } = bodyValidation(mode, NewCrate);

  it('should hand on a valid body, the integers as numbers, an absent optional one absent', async () => {
    await expect(validate({ id: 7, count: 1 })).resolves.toEqual({ id: 7n, count: 1 });
    await expect(validate({ id: 7, count: 10000, tilt: -5 })).resolves.toEqual({ id: 7n, count: 10000, tilt: -5 });
    await expect(validate({ id: 7, count: 3, tilt: 5 })).resolves.toEqual({ id: 7n, count: 3, tilt: 5 });
  });

  it.each<[string, unknown, string]>([
    ['no count', { id: 1 }, 'count is required'],
    ['a null count', { id: 1, count: null }, 'count is required'],
    ['no fields', {}, 'id is required; count is required'],
    ['a count as a string', { id: 1, count: '3' }, COUNT],
    ['a fractional count', { id: 1, count: 2.5 }, COUNT],
    ['a boolean count', { id: 1, count: true }, COUNT],
    ['a count below the range', { id: 1, count: 0 }, COUNT],
    ['a count above the range', { id: 1, count: 10001 }, COUNT],
    // The body parser hands integers beyond 2^53 over as bigint.
    ['a count beyond 2^53', { id: 1, count: 2n ** 63n }, COUNT],
    ['a null optional field', { id: 1, count: 3, tilt: null }, 'tilt must be an integer between -5 and 5'],
    ['an optional field out of range', { id: 1, count: 3, tilt: 6 }, 'tilt must be an integer between -5 and 5'],
    [
      'everything wrong',
      { id: '7', count: '3', tilt: 1.5 },
      `id must be an integer in the int64 range; ${COUNT}; tilt must be an integer between -5 and 5`,
    ],
  ])('should answer 400 for %s, naming each field', async (_label, body, message) => {
    expect(await messageFor(body)).toBe(message);
  });
});

describe('IntegerProperty', () => {
  it.each<[string, number, number]>([
    ['a min above the max', 2, 1],
    ['a fractional bound', 0, 1.5],
    ['a bound beyond int32', 0, 2 ** 31],
  ])('should refuse %s when the DTO is declared', (_label, min, max) => {
    expect(() => IntegerProperty({ min, max })).toThrow(
      `IntegerProperty: min ${min} and max ${max} must be int32 integers, min <= max`,
    );
  });

  describe('in the document', () => {
    it('should declare an int32 with its bounds, and which fields are required', async () => {
      const schema = await documentedSchema(NewCrate);
      expect(schema).toEqual({
        type: 'object',
        properties: {
          id: { type: 'integer', format: 'int64', minimum: -(2 ** 63), maximum: 2 ** 63 },
          count: { type: 'integer', format: 'int32', minimum: 1, maximum: 10000 },
          tilt: { type: 'integer', format: 'int32', minimum: -5, maximum: 5 },
        },
        required: ['id', 'count'],
      });
    });
  });
});
