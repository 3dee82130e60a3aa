import { bodyValidation, documentedSchema } from '../../../test/support/body-validation';
import { OneOfProperty } from './one-of-property.decorator';

class NewPot {
  @OneOfProperty({ values: ['small', 'medium', 'large'] })
  size!: 'small' | 'medium' | 'large';

  @OneOfProperty({ values: ['clay', 'plastic'], optional: true })
  material?: string;
}

const SIZE = 'size must be small, medium or large';

describe.each(['compiled', 'stock'] as const)('OneOfProperty with the %s pipe', (mode) => {
  const { validate, messageFor } = bodyValidation(mode, NewPot);

  it('should hand on a valid body, an absent optional field absent', async () => {
    await expect(validate({ size: 'small' })).resolves.toEqual({ size: 'small' });
    await expect(validate({ size: 'large', material: 'clay' })).resolves.toEqual({ size: 'large', material: 'clay' });
  });

  it.each<[string, unknown, string]>([
    ['no fields', {}, 'size is required'],
    ['a null field', { size: null }, 'size is required'],
    ['another value', { size: 'huge' }, SIZE],
    ['another case', { size: 'Small' }, SIZE],
    ['a value with a space', { size: 'small ' }, SIZE],
    ['a number', { size: 1 }, SIZE],
    ['a null optional field', { size: 'small', material: null }, 'material must be clay or plastic'],
    ['everything wrong', { size: 'huge', material: 'wood' }, `${SIZE}; material must be clay or plastic`],
  ])('should answer 400 for %s, naming each field', async (_label, body, message) => {
    expect(await messageFor(body)).toBe(message);
  });
});

describe('OneOfProperty', () => {
  it.each<[string, string[]]>([
    ['no values', []],
    ['a value twice', ['a', 'b', 'a']],
    ['an empty value', ['a', '']],
  ])('should refuse %s when the DTO is declared', (_label, values) => {
    expect(() => OneOfProperty({ values })).toThrow('must be distinct non-empty strings, at least one');
  });

  describe('in the document', () => {
    it('should declare the values as an enum (what the OWASP rules ask of a string), and which are required', async () => {
      const schema = await documentedSchema(NewPot);
      expect(schema).toEqual({
        type: 'object',
        properties: {
          size: { type: 'string', enum: ['small', 'medium', 'large'] },
          material: { type: 'string', enum: ['clay', 'plastic'] },
        },
        required: ['size'],
      });
    });
  });
});
