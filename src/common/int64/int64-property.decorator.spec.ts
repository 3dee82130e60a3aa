import { bodyValidation, documentedSchema } from '../../../test/support/body-validation';
import { Int64Property } from './int64-property.decorator';

// The required int64 (an id) is held by the TextProperty spec; this one holds the optional one.
class NewShelf {
  @Int64Property()
  id!: bigint;

  @Int64Property({ optional: true })
  stock?: bigint;
}

const STOCK = 'stock must be an integer in the int64 range';

describe.each(['compiled', 'stock'] as const)('Int64Property({ optional: true }) with the %s pipe', (mode) => {
  const { validate, messageFor } = bodyValidation(mode, NewShelf);

  it('should hand on an absent field absent, and a present one as an exact bigint', async () => {
    await expect(validate({ id: 1 })).resolves.toEqual({ id: 1n });
    await expect(validate({ id: 1, stock: 0 })).resolves.toEqual({ id: 1n, stock: 0n });
    await expect(validate({ id: 1, stock: -(2n ** 63n) })).resolves.toEqual({ id: 1n, stock: -(2n ** 63n) });
  });

  it.each<[string, unknown, string]>([
    ['a null field', { id: 1, stock: null }, STOCK],
    ['a string', { id: 1, stock: '7' }, STOCK],
    ['a fraction', { id: 1, stock: 1.5 }, STOCK],
    ['a value beyond int64', { id: 1, stock: 2n ** 63n }, STOCK],
    ['no id beside it', { stock: 7 }, 'id is required'],
  ])('should answer 400 for %s', async (_label, body, message) => {
    expect(await messageFor(body)).toBe(message);
  });
});

describe('Int64Property({ optional: true }) in the document', () => {
  it('should declare it as an int64 that is not required', async () => {
    const schema = await documentedSchema(NewShelf);
    const int64 = { type: 'integer', format: 'int64', minimum: -(2 ** 63), maximum: 2 ** 63 };
    expect(schema).toEqual({
      type: 'object',
      properties: { id: int64, stock: int64 },
      required: ['id'],
    });
  });
});
