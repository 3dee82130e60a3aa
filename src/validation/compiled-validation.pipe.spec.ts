import { ArgumentMetadata, HttpException, ValidationPipe } from '@nestjs/common';
import { Type } from 'class-transformer';
import Fastify from 'fastify';
import {
  IsString,
  MaxLength,
  Validate,
  ValidateNested,
  ValidatorConstraint,
  ValidatorConstraintInterface,
} from 'class-validator';
import { PageQueryDto } from '../common/paging/page-query.dto';
import { INT64_MAX, INT64_MIN } from '../common/int64/is-int64.decorator';
import { NewPlantDto } from '../plants/dto/new-plant.dto';
import { CompiledValidationPipe, compileValidation } from './compiled-validation.pipe';
import { REQUEST_VALIDATION, RequestValidationPipe } from './request-validation.pipe';

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

/** The compiled function alone, as the pipe would return its answer: never the stock path. */
function compiledOnly(metatype: new () => object): (body: unknown) => Promise<unknown> {
  const compiled = compileValidation(metatype);
  if (compiled === undefined) throw new Error(`${metatype.name} did not compile`);
  return async (body) => {
    const result = compiled(body as Record<string, unknown>);
    if (result === undefined) throw new Error('the compiled path gave up');
    if (result.violations) throw new Error(result.violations.map(({ message }) => message).join('; '));
    return result.instance;
  };
}

/** What the pipe hands the compiled path: an object whose values are all primitives. */
function isFlat(body: Record<string, unknown>): boolean {
  return Object.values(body).every((value) => typeof value !== 'object' || value === null);
}

/** A small deterministic generator (mulberry32), so a failing corpus can be replayed. */
function seeded(seed: number): () => number {
  let state = seed;
  return () => {
    state = (state + 0x6d2b79f5) | 0;
    let t = Math.imul(state ^ (state >>> 15), 1 | state);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

describe('CompiledValidationPipe', () => {
  const requestPipe = new RequestValidationPipe();
  // The request pipe answers at once where it can (a value, or a throw); as Nest takes it, a promise.
  const pipe = {
    transform: async (value: unknown, metadata: ArgumentMetadata) => requestPipe.transform(value, metadata),
  };
  // The stock ValidationPipe with the same options, for the compiled path to be held to.
  const stockPipe = new ValidationPipe(REQUEST_VALIDATION);
  const compiled = (body: unknown) => pipe.transform(body, BODY);
  const stock = (body: unknown) => stockPipe.transform(body, BODY) as Promise<unknown>;

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

  it('should use the compiled path for a query as Fastify parses it, and answer as the stock pipe', async () => {
    // The query objects of Fastify's router, not look-alikes (their prototype is the router's own):
    // two of each, as the stock pipe edits values in place.
    const app = Fastify();
    const queries: unknown[] = [];
    app.get('/', async (request) => queries.push(request.query));
    const searches = ['', '?after=95000', '?limit=10&after=-7', '?limit=0', '?after=1.5&other=x'];
    for (const search of [...searches, ...searches]) await app.inject(`/${search}`);
    await app.close();
    const metadata: ArgumentMetadata = { type: 'query', metatype: PageQueryDto, data: '' };
    const answer = (run: () => Promise<unknown>) =>
      run().then(
        (dto) => ({ dto, type: (dto as object).constructor }),
        (error: Error) => ({ message: error.message }),
      );
    const stockTransform = jest.spyOn(ValidationPipe.prototype, 'transform');
    try {
      for (let index = 0; index < searches.length; index++) {
        const compiledAnswer = await answer(() => pipe.transform(queries[index], metadata));
        expect(stockTransform).not.toHaveBeenCalled();
        const stockAnswer = await answer(() => stockPipe.transform(queries[index + searches.length], metadata));
        expect({ search: searches[index], ...compiledAnswer }).toEqual({ search: searches[index], ...stockAnswer });
        stockTransform.mockClear();
      }
    } finally {
      stockTransform.mockRestore();
    }
  });

  it('should accept, refuse and word its messages exactly as class-transformer + class-validator do', async () => {
    let compared = 0;
    let refused = 0;
    for (const body of bodies()) {
      if (!isFlat(body)) continue; // The pipe hands only flat bodies to the compiled path.
      const expected = await outcome(stock, body);
      expect({ body, ...(await outcome(compiledOnly(NewPlantDto), body)) }).toEqual({ body, ...expected });
      compared += 1;
      if ('message' in expected) refused += 1;
    }
    expect(compared).toBeGreaterThan(2000);
    // Both sides of the rules are exercised, not just one.
    expect(refused).toBeGreaterThan(compared / 2);
    expect(compared - refused).toBeGreaterThan(50);
  });

  it('should agree with the stock pipe on a generated corpus of bodies and queries', async () => {
    const random = seeded(20261123);
    const pick = <T>(values: readonly T[]): T => values[Math.floor(random() * values.length)];
    const text = () => {
      const length = pick([0, 1, 2, 5, 99, 100, 101, 199, 200, 201]);
      const alphabet = ['a', 'Z', ' ', '\u0000', '\uD800', '\uDFFF', '🌿', 'ü', '"', '\\', '$value'];
      return Array.from({ length }, () => pick(alphabet)).join('');
    };
    const scalar = () =>
      pick<() => unknown>([
        text,
        () => Math.floor(random() * 2 ** 53) * pick([1, -1]),
        () => BigInt(Math.floor(random() * 2 ** 53)) * 2n ** BigInt(Math.floor(random() * 12)) * pick([1n, -1n]),
        () => random() * 1000,
        () => pick([null, true, false, 0, -0, NaN, Infinity, INT64_MAX, INT64_MIN, INT64_MAX + 1n, INT64_MIN - 1n]),
        () => String(Math.floor(random() * 2000) - 500),
      ])();
    let compared = 0;
    for (let index = 0; index < 3000; index++) {
      const body: Record<string, unknown> = {};
      for (const field of ['id', 'name', 'tag', 'extra']) if (random() < 0.8) body[field] = scalar();
      const metadata: ArgumentMetadata = { type: 'body', metatype: NewPlantDto, data: '' };
      const expected = await outcome((b) => stockPipe.transform(b, metadata), body);
      expect({ body, ...(await outcome(compiledOnly(NewPlantDto), body)) }).toEqual({ body, ...expected });
      compared += 1;
    }
    for (let index = 0; index < 1500; index++) {
      const query: Record<string, unknown> = Object.create(null) as Record<string, unknown>;
      for (const field of ['limit', 'after', 'other']) if (random() < 0.7) query[field] = String(scalar());
      const metadata: ArgumentMetadata = { type: 'query', metatype: PageQueryDto, data: '' };
      const expected = await outcome((q) => stockPipe.transform(q, metadata), query);
      expect({ query, ...(await outcome(compiledOnly(PageQueryDto), query)) }).toEqual({ query, ...expected });
      compared += 1;
    }
    expect(compared).toBe(4500);
  });

  it('should leave a rule that answers with a promise to the stock pipe, which awaits it', async () => {
    @ValidatorConstraint({ name: 'slow', async: false })
    class SlowNo implements ValidatorConstraintInterface {
      validate(): Promise<boolean> {
        return Promise.resolve(false);
      }
      defaultMessage(): string {
        return 'value was refused later';
      }
    }
    class Slow {
      @Validate(SlowNo)
      value!: string;
    }
    expect(compileValidation(Slow)?.({ value: 'x' })).toBeUndefined();
    const metadata: ArgumentMetadata = { type: 'body', metatype: Slow, data: '' };
    await expect(pipe.transform({ value: 'x' }, metadata)).rejects.toThrow('value was refused later');
  });

  it('should strip what the constructor sets on a property without rules, as the stock whitelist does', async () => {
    class Initialised {
      @IsString()
      name!: string;

      note = 'set by the constructor';
    }
    const metadata: ArgumentMetadata = { type: 'body', metatype: Initialised, data: '' };
    const expected = await stockPipe.transform({ name: 'x' }, metadata);
    expect(expected).not.toHaveProperty('note');
    expect(await pipe.transform({ name: 'x' }, metadata)).toEqual(expected);
    expect(compileValidation(Initialised)?.({ name: 'x' })).toEqual({ instance: expected });
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
      const expected = await outcome((b) => stockPipe.transform(b, metadata), body);
      expect(expected.message).toBe(`short "${value}" is longer than 3; counted has ${value.length} characters`);
      expect(await outcome((b) => pipe.transform(b, metadata), body)).toEqual(expected);
    }
  });

  it('should answer as the stock ValidationPipe with the same options and its own exception factory', async () => {
    const options = {
      whitelist: true,
      transform: true,
      stopAtFirstError: true,
      transformOptions: { enableImplicitConversion: false },
    };
    const ours = new CompiledValidationPipe(options);
    const theirs = new ValidationPipe(options);
    const stockTransform = jest.spyOn(ValidationPipe.prototype, 'transform');
    const answer = async (pipe: ValidationPipe, body: Record<string, unknown>) => {
      try {
        const dto = await pipe.transform({ ...body }, BODY);
        return { dto, type: (dto as object).constructor };
      } catch (error) {
        return { status: (error as HttpException).getStatus(), response: (error as HttpException).getResponse() };
      }
    };
    try {
      let compared = 0;
      for (const body of bodies()) {
        if (!isFlat(body)) continue;
        stockTransform.mockClear();
        const mine = await answer(ours, body);
        // The compiled path answered: the only stock call is the reference pipe's own, below.
        expect(stockTransform).not.toHaveBeenCalled();
        expect({ body, ...mine }).toEqual({ body, ...(await answer(theirs, body)) });
        compared += 1;
      }
      expect(compared).toBeGreaterThan(2000);
    } finally {
      stockTransform.mockRestore();
    }
  });

  it('should leave every value to the stock pipe under options it does not reproduce', async () => {
    const stockTransform = jest.spyOn(ValidationPipe.prototype, 'transform');
    try {
      for (const options of [
        { whitelist: true, transform: true, stopAtFirstError: true, forbidNonWhitelisted: true },
        { whitelist: true, transform: true },
        {
          whitelist: true,
          transform: true,
          stopAtFirstError: true,
          transformOptions: { enableImplicitConversion: true },
        },
        { whitelist: true, transform: true, stopAtFirstError: true, groups: ['x'] },
      ]) {
        stockTransform.mockClear();
        const outcomeOf = async (pipe: ValidationPipe): Promise<unknown> => {
          try {
            return (await pipe.transform({ id: 1, name: 'Monstera', other: 1 }, BODY)) as unknown;
          } catch (error) {
            return (error as HttpException).getResponse();
          }
        };
        const mine = await outcomeOf(new CompiledValidationPipe(options));
        expect(stockTransform).toHaveBeenCalledTimes(1);
        expect(mine).toEqual(await outcomeOf(new ValidationPipe(options)));
      }
    } finally {
      stockTransform.mockRestore();
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
