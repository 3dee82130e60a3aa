import { ArgumentMetadata, ValidationPipe } from '@nestjs/common';
import { Type } from 'class-transformer';
import { IsString, MaxLength, ValidateNested } from 'class-validator';
import { INT64_MAX, INT64_MIN } from '../plants/dto/is-int64.decorator';
import { NewPlantDto } from '../plants/dto/new-plant.dto';
import { compileValidation } from './compiled-validation';
import { RequestValidationPipe } from './request-validation.pipe';

const BODY: ArgumentMetadata = { type: 'body', metatype: NewPlantDto, data: '' };
const ABSENT = Symbol('absent');

const ids = [
  ABSENT,
  null,
  0,
  1,
  -1,
  1.5,
  1e300,
  '1',
  true,
  2 ** 53,
  2n ** 53n + 1n,
  INT64_MAX,
  INT64_MIN,
  INT64_MAX + 1n,
  INT64_MIN - 1n,
  {},
  [1],
];
const texts = [
  ABSENT,
  null,
  '',
  'a',
  'Monstera deliciosa',
  'x'.repeat(100),
  'x'.repeat(101),
  'x'.repeat(200),
  'x'.repeat(201),
  5,
  false,
  'a\u0000b',
  '\uD800',
  '🌿 ü',
  {},
  ['a'],
];

/** Every combination of the values above for id, name and tag, plus an unknown field. */
function* bodies(): Generator<Record<string, unknown>> {
  for (const id of ids)
    for (const name of texts)
      for (const tag of texts) {
        const body: Record<string, unknown> = { extra: 'dropped' };
        if (id !== ABSENT) body.id = id;
        if (name !== ABSENT) body.name = name;
        if (tag !== ABSENT) body.tag = tag;
        yield body;
      }
}

function copyOf(value: unknown): unknown {
  if (Array.isArray(value)) return [...(value as unknown[])];
  return typeof value === 'object' && value !== null ? { ...value } : value;
}

/** The pipe's answer for a body: the DTO it hands on, or the 400 message. */
async function outcome(run: (body: unknown) => Promise<unknown>, body: Record<string, unknown>) {
  try {
    // A fresh copy for each run (the stock pipe edits values in place), made in this realm.
    const copy = Object.fromEntries(Object.entries(body).map(([key, value]) => [key, copyOf(value)]));
    const dto = await run(copy);
    return { dto, type: (dto as object).constructor };
  } catch (error) {
    return { message: (error as Error).message };
  }
}

describe('compileValidation', () => {
  const pipe = new RequestValidationPipe();
  const compiled = (body: unknown) => pipe.transform(body, BODY);
  const stock = (body: unknown) => ValidationPipe.prototype.transform.call(pipe, body, BODY) as Promise<unknown>;

  it('should compile NewPlantDto, and the pipe should use it for a flat body', async () => {
    expect(compileValidation(NewPlantDto)).toBeInstanceOf(Function);
    const stockTransform = jest.spyOn(ValidationPipe.prototype, 'transform');
    try {
      await expect(compiled({ id: 1, name: 'Monstera' })).resolves.toEqual(
        Object.assign(new NewPlantDto(), { id: 1n, name: 'Monstera' }),
      );
      await expect(compiled({ id: 1, name: 5 })).rejects.toThrow('name must be a string');
      expect(stockTransform).not.toHaveBeenCalled();
    } finally {
      stockTransform.mockRestore();
    }
  });

  it('should accept, refuse and word its messages exactly as class-transformer + class-validator do', async () => {
    let compared = 0;
    let refused = 0;
    for (const body of bodies()) {
      const expected = await outcome(stock, body);
      expect({ body, ...(await outcome(compiled, body)) }).toEqual({ body, ...expected });
      compared += 1;
      if ('message' in expected) refused += 1;
    }
    expect(compared).toBe(ids.length * texts.length * texts.length);
    // Both sides of the rules are exercised, not just one.
    expect(refused).toBeGreaterThan(compared / 2);
    expect(compared - refused).toBeGreaterThan(50);
  });

  it('should build a message that names the value anew for each value, like the stock pipe', async () => {
    class Named {
      @MaxLength(3, { message: '$property "$value" is longer than $constraint1' })
      short!: string;

      @MaxLength(3, { message: (args) => `${args.property} has ${String(args.value).length} characters` })
      counted!: string;
    }
    const metadata: ArgumentMetadata = { type: 'body', metatype: Named, data: '' };
    expect(compileValidation(Named)).toBeInstanceOf(Function);
    for (const value of ['abcd', 'abcde', 'abcd', 'abcdef']) {
      const body = { short: value, counted: value };
      const expected = await outcome((b) => ValidationPipe.prototype.transform.call(pipe, b, metadata), body);
      expect(expected.message).toBe(`short "${value}" is longer than 3; counted has ${value.length} characters`);
      expect(await outcome((b) => pipe.transform(b, metadata), body)).toEqual(expected);
    }
  });

  it('should leave a DTO with rules it does not know (nested, each) to the stock pipe', () => {
    class Leaf {
      @IsString()
      name!: string;
    }
    class Nested {
      @ValidateNested()
      @Type(() => Leaf)
      leaf!: Leaf;
    }
    class Each {
      @IsString({ each: true })
      names!: string[];
    }
    expect(compileValidation(Nested)).toBeUndefined();
    expect(compileValidation(Each)).toBeUndefined();
  });
});
