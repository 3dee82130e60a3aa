import { bodyValidation, documentedSchema } from '../../../test/support/body-validation';
import { PatternProperty } from './pattern-property.decorator';

class NewParcel {
  @PatternProperty({ pattern: /^[A-Z]{2}$/, max: 2 })
  country!: string;

  @PatternProperty({ pattern: /^\p{Lu}[\p{L}-]*$/u, max: 6, what: 'a capitalised word', optional: true })
  place?: string;
}

const COUNTRY = 'country must match ^[A-Z]{2}$';
const PLACE = 'place must be a capitalised word';

describe.each(['compiled', 'stock'] as const)('PatternProperty with the %s pipe', (mode) => {
  const { validate, messageFor } = bodyValidation(mode, NewParcel);

  it('should hand on a valid body, an absent optional field absent', async () => {
    await expect(validate({ country: 'DE' })).resolves.toEqual({ country: 'DE' });
    await expect(validate({ country: 'FR', place: 'Évian' })).resolves.toEqual({ country: 'FR', place: 'Évian' });
  });

  it.each<[string, unknown, string]>([
    ['no fields', {}, 'country is required'],
    ['a null field', { country: null }, 'country is required'],
    ['a number', { country: 49 }, 'country must be a string'],
    ['a value too long, before the pattern', { country: 'DEU' }, 'country must be at most 2 characters long'],
    // The trap of class-validator's ISO 3166 check, which takes "de": the pattern is anchored and exact.
    ['lower case', { country: 'de' }, COUNTRY],
    ['an empty value', { country: '' }, COUNTRY],
    ['a value that only starts right', { country: 'D1' }, COUNTRY],
    ['a NUL', { country: 'D\u0000' }, 'country must be Unicode text without NUL characters'],
    ['a null optional field', { country: 'DE', place: null }, 'place must be a string'],
    ['an optional field off its pattern, in its own words', { country: 'DE', place: 'évian' }, PLACE],
    [
      'everything wrong',
      { country: 'de', place: 'Évian-les-Bains' },
      `${COUNTRY}; place must be at most 6 characters long`,
    ],
  ])('should answer 400 for %s, naming each field', async (_label, body, message) => {
    expect(await messageFor(body)).toBe(message);
  });
});

describe('PatternProperty', () => {
  it.each<[string, RegExp, string]>([
    ['a pattern not anchored at the start', /[A-Z]{2}$/, 'must hold the whole value'],
    ['a pattern not anchored at the end', /^[A-Z]{2}/, 'must hold the whole value'],
    ['an escaped last $', /^[A-Z]{2}\$/, 'must hold the whole value'],
    ['an alternative outside a group', /^a|b$/, 'must hold the whole value'],
    ['the i flag', /^[a-z]{2}$/i, 'has flags the document cannot carry: only u'],
    ['a pattern invalid with the u flag', /^[\w-.]+$/, 'is not valid with the u flag'],
  ])('should refuse %s when the DTO is declared', (_label, pattern, problem) => {
    expect(() => PatternProperty({ pattern, max: 10 })).toThrow(problem);
  });

  it('should take alternatives inside a group, a | in a class and an escaped \\ before the last $', () => {
    for (const pattern of [/^(a|b)$/, /^[|]+$/, /^a\\$/])
      expect(() => PatternProperty({ pattern, max: 10 })).not.toThrow();
  });

  it('should refuse a max that is not a positive integer', () => {
    expect(() => PatternProperty({ pattern: /^a$/, max: 0 })).toThrow(
      'PatternProperty: max 0 must be a positive integer',
    );
  });

  describe('in the document', () => {
    it('should declare the pattern and the most characters (what the OWASP rules ask of a string)', async () => {
      const schema = await documentedSchema(NewParcel);
      expect(schema).toEqual({
        type: 'object',
        properties: {
          country: { type: 'string', maxLength: 2, pattern: '^[A-Z]{2}$' },
          place: { type: 'string', maxLength: 6, pattern: '^\\p{Lu}[\\p{L}-]*$' },
        },
        required: ['country'],
      });
    });
  });
});
