import { bodyValidation, documentedSchema } from '../../../test/support/body-validation';
import { BooleanProperty } from './boolean-property.decorator';

class NewTask {
  @BooleanProperty()
  done!: boolean;

  @BooleanProperty({ optional: true })
  urgent?: boolean;
}

describe.each(['compiled', 'stock'] as const)('BooleanProperty with the %s pipe', (mode) => {
  const { validate, messageFor } = bodyValidation(mode, NewTask);

  it('should hand on a valid body, an absent optional flag absent', async () => {
    await expect(validate({ done: false })).resolves.toEqual({ done: false });
    await expect(validate({ done: true, urgent: false })).resolves.toEqual({ done: true, urgent: false });
  });

  it.each<[string, unknown, string]>([
    ['no flag', {}, 'done is required'],
    ['a null flag', { done: null }, 'done is required'],
    ['a flag as a string', { done: 'true' }, 'done must be true or false'],
    ['a flag as a number', { done: 1 }, 'done must be true or false'],
    ['a null optional flag', { done: true, urgent: null }, 'urgent must be true or false'],
  ])('should answer 400 for %s, naming the field', async (_label, body, message) => {
    expect(await messageFor(body)).toBe(message);
  });
});

describe('BooleanProperty in the document', () => {
  it('should declare a boolean, and which fields are required', async () => {
    const schema = await documentedSchema(NewTask);
    expect(schema).toEqual({
      type: 'object',
      properties: { done: { type: 'boolean' }, urgent: { type: 'boolean' } },
      required: ['done'],
    });
  });
});
