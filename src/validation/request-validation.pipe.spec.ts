import { ArgumentMetadata, BadRequestException, ValidationPipe } from '@nestjs/common';
import { Type } from 'class-transformer';
import { IsInt, IsString, ValidateNested } from 'class-validator';
import { PageQueryDto } from '../common/paging/page-query.dto';
import { NewPlantDto } from '../plants/dto/new-plant.dto';
import { SecretRotationDto } from '../webhooks/endpoints/dto/endpoint.dto';
import { RequestValidationPipe } from './request-validation.pipe';

class Address {
  @IsString({ message: 'city must be a string' })
  city!: string;
}

class Item {
  @IsString()
  name!: string;

  @IsInt()
  count!: number;
}

class Order {
  @ValidateNested()
  @Type(() => Address)
  address!: Address;

  @ValidateNested({ each: true })
  @Type(() => Item)
  items!: Item[];
}

const ORDER: ArgumentMetadata = { type: 'body', metatype: Order, data: '' };

async function messageFor(body: unknown): Promise<string> {
  try {
    await new RequestValidationPipe().transform(body, ORDER);
  } catch (error) {
    expect(error).toBeInstanceOf(BadRequestException);
    return (error as Error).message;
  }
  throw new Error('the body was accepted');
}

describe('RequestValidationPipe messages for nested DTOs', () => {
  it('should keep the path of a nested property', async () => {
    const message = await messageFor({ address: { city: 5 }, items: [{ name: 'a', count: 1 }] });
    expect(message).toBe('address.city must be a string');
  });

  it('should keep the index of an item in a list', async () => {
    const message = await messageFor({
      address: { city: 'Graz' },
      items: [
        { name: 'a', count: 1 },
        { name: 7, count: 'x' },
      ],
    });
    expect(message).toBe('items.1.name must be a string; items.1.count must be an integer number');
  });

  it.each([
    ['a nested value that is not an object', { address: 'Graz', items: [] }],
    ['a list that is not a list', { address: { city: 'Graz' }, items: 'none' }],
    ['a list item that is not an object', { address: { city: 'Graz' }, items: [3] }],
  ])('should word %s without "undefined" or a class name', async (_case, body) => {
    const message = await messageFor(body);
    expect(message).not.toMatch(/undefined|Order|Address|Item\b/);
    expect(message).toMatch(/\b(address|items)\b/);
  });
});

describe('RequestValidationPipe answers', () => {
  const pipe = new RequestValidationPipe();
  const body = (metatype: ArgumentMetadata['metatype']): ArgumentMetadata => ({ type: 'body', metatype, data: '' });

  // A path id and a flat DTO are answered at once, as a value or a thrown 400, without a promise of
  // the pipe's own (docs/nest-router-proposal.md).
  it('should hand a bigint parameter on as it is, at once', () => {
    const metadata: ArgumentMetadata = { type: 'param', metatype: BigInt as never, data: 'id' };
    expect(pipe.transform('42', metadata)).toBe('42');
  });

  it('should answer a flat body its compiled rules take at once: the instance, or the 400', () => {
    expect(pipe.transform({ id: 7, name: 'Monstera', extra: 1 }, body(NewPlantDto))).toEqual(
      Object.assign(new NewPlantDto(), { id: 7n, name: 'Monstera' }),
    );
    expect(() => pipe.transform({ id: 7, name: 5 }, body(NewPlantDto))).toThrow(
      new BadRequestException('name must be a string'),
    );
    expect(() => pipe.transform(undefined, body(NewPlantDto))).toThrow('Request body is required: send a JSON object');
  });

  it('should hand on at once what the stock pipe does not validate, converted as it converts it', () => {
    const param = (metatype: ArgumentMetadata['metatype']): ArgumentMetadata => ({
      type: 'param',
      metatype,
      data: 'p',
    });
    expect(pipe.transform(12, param(String))).toBe('12');
    expect(pipe.transform('12', param(Number))).toBe(12);
    expect(pipe.transform('true', param(Boolean))).toBe(true);
    expect(pipe.transform(undefined, param(Number))).toBeUndefined();
    const custom = { type: 'custom', metatype: NewPlantDto, data: undefined } as const;
    const value = { anything: 1 };
    expect(pipe.transform(value, custom)).toBe(value);
  });

  it('should answer an optional body that is absent with its DTO at once', () => {
    expect(pipe.transform(undefined, body(SecretRotationDto))).toBeInstanceOf(SecretRotationDto);
  });

  it('should answer with the stock pipe’s promise for what it does not compile', async () => {
    const answer = pipe.transform({ address: { city: 'Graz' }, items: [] }, ORDER);
    expect(answer).toBeInstanceOf(Promise);
    await expect(answer).resolves.toBeInstanceOf(Order);
  });
});

describe('RequestValidationPipe with VALIDATION_PIPE=stock', () => {
  const stock = new RequestValidationPipe('stock');
  const compiled = new RequestValidationPipe('compiled');

  /** The pipe's answer as Nest takes it: the value handed on and its class, or the exception's response. */
  async function answer(pipe: RequestValidationPipe, value: unknown, metadata: ArgumentMetadata) {
    try {
      const handed = await pipe.transform(value, metadata);
      return { handed, type: (handed as object | undefined)?.constructor };
    } catch (error) {
      return {
        status: (error as BadRequestException).getStatus(),
        response: (error as BadRequestException).getResponse(),
      };
    }
  }

  // The last column: whether Nest's pipe sees the value (a bigint parameter and a missing body are the
  // request pipe's own rules, the same in both modes).
  const cases: [string, unknown, ArgumentMetadata, boolean][] = [
    ['a valid body', { id: 7, name: 'Monstera', extra: 1 }, { type: 'body', metatype: NewPlantDto, data: '' }, true],
    ['an invalid body', { id: '7', name: 5, tag: null }, { type: 'body', metatype: NewPlantDto, data: '' }, true],
    ['no body', undefined, { type: 'body', metatype: NewPlantDto, data: '' }, false],
    ['an optional body left out', undefined, { type: 'body', metatype: SecretRotationDto, data: '' }, true],
    ['a nested body', { address: { city: 5 }, items: [] }, ORDER, true],
    ['a valid query', { limit: '10', after: '-7' }, { type: 'query', metatype: PageQueryDto, data: '' }, true],
    ['an invalid query', { limit: '0', after: 'x' }, { type: 'query', metatype: PageQueryDto, data: '' }, true],
    ['a bigint path parameter', '42', { type: 'param', metatype: BigInt as never, data: 'id' }, false],
    ['a number parameter', '12', { type: 'param', metatype: Number, data: 'p' }, true],
  ];

  it.each(cases)(
    'should answer %s as the compiled pipe does, through the stock ValidationPipe',
    async (_case, value, metadata, throughNest) => {
      const stockTransform = jest.spyOn(ValidationPipe.prototype, 'transform');
      try {
        const expected = await answer(compiled, structuredClone(value), metadata);
        stockTransform.mockClear();
        expect(await answer(stock, structuredClone(value), metadata)).toEqual(expected);
        expect(stockTransform).toHaveBeenCalledTimes(throughNest ? 1 : 0);
      } finally {
        stockTransform.mockRestore();
      }
    },
  );
});
