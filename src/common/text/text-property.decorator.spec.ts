import { bodyValidation, documentedSchema } from '../../../test/support/body-validation';
import { Int64Property } from '../int64/int64-property.decorator';
import { TextProperty } from './text-property.decorator';

class NewWidget {
  @Int64Property()
  id!: bigint;

  @TextProperty({ max: 5 })
  label!: string;

  @TextProperty({ min: 2, max: 3, optional: true })
  note?: string;
}

describe.each(['compiled', 'stock'] as const)('Int64Property and TextProperty with the %s pipe', (mode) => {
  const { validate, messageFor } = bodyValidation(mode, NewWidget);

  it('should hand on a valid body, the id as an exact bigint', async () => {
    await expect(validate({ id: 7, label: 'abcde' })).resolves.toEqual({ id: 7n, label: 'abcde' });
    await expect(validate({ id: 2n ** 63n - 1n, label: 'a', note: 'xy' })).resolves.toEqual({
      id: 2n ** 63n - 1n,
      label: 'a',
      note: 'xy',
    });
  });

  it.each<[string, unknown, string]>([
    ['no fields', {}, 'id is required; label is required'],
    ['null fields', { id: null, label: null }, 'id is required; label is required'],
    ['an id as a string', { id: '7', label: 'a' }, 'id must be an integer in the int64 range'],
    ['a fractional id', { id: 1.5, label: 'a' }, 'id must be an integer in the int64 range'],
    ['an id beyond int64', { id: 2n ** 63n, label: 'a' }, 'id must be an integer in the int64 range'],
    ['a numeric label', { id: 1, label: 5 }, 'label must be a string'],
    ['an empty label', { id: 1, label: '' }, 'label must be 1 to 5 characters long'],
    ['a label too long', { id: 1, label: 'abcdef' }, 'label must be 1 to 5 characters long'],
    ['a NUL', { id: 1, label: 'a\u0000' }, 'label must be Unicode text without NUL characters'],
    ['an unpaired surrogate', { id: 1, label: 'a\ud800' }, 'label must be Unicode text without NUL characters'],
    ['a null optional field', { id: 1, label: 'a', note: null }, 'note must be a string'],
    ['an optional field too short', { id: 1, label: 'a', note: 'x' }, 'note must be 2 to 3 characters long'],
  ])('should answer 400 for %s, naming each field', async (_label, body, message) => {
    expect(await messageFor(body)).toBe(message);
  });
});

describe('Int64Property and TextProperty in the document', () => {
  it('should declare the type, the bounds, the pattern and which fields are required', async () => {
    const schema = await documentedSchema(NewWidget);
    expect(schema).toEqual({
      type: 'object',
      properties: {
        id: { type: 'integer', format: 'int64', minimum: -(2 ** 63), maximum: 2 ** 63 },
        label: {
          type: 'string',
          minLength: 1,
          maxLength: 5,
          pattern: '^[^\\u0000\\uD800-\\uDFFF]*$',
        },
        note: {
          type: 'string',
          minLength: 2,
          maxLength: 3,
          pattern: '^[^\\u0000\\uD800-\\uDFFF]*$',
        },
      },
      required: ['id', 'label'],
    });
  });
});
