import { ApiProperty } from '@nestjs/swagger';
import { Transform } from 'class-transformer';
import { bodyProperty } from '../body/body-property';
import { INT64_SCHEMA } from './int64-schema';
import { IsInt64 } from './is-int64.decorator';

export interface Int64PropertyOptions {
  /** May be absent (never null: `"stock": null` breaks its rule). Required by default, as an id is. */
  readonly optional?: boolean;
}

/**
 * An int64 property of a request body (an id, or any count beyond int32), kept exactly: documented as
 * `INT64_SCHEMA`, "<property> is required" when absent (or null, if required), "<property> must be an
 * integer in the int64 range" otherwise. The JSON parser hands integers beyond 2^53 over as bigint;
 * the safe ones become bigint here, so the property is always a bigint. Describe it with a JSDoc
 * comment (and `@example`).
 */
export function Int64Property({ optional = false }: Int64PropertyOptions = {}): PropertyDecorator {
  const rules = [
    Transform(({ value }: { value: unknown }) =>
      typeof value === 'number' && Number.isSafeInteger(value) ? BigInt(value) : value,
    ),
    IsInt64(),
    ApiProperty({ ...INT64_SCHEMA, required: !optional }),
  ];
  return bodyProperty(optional, rules);
}
