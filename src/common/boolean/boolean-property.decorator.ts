import { ApiProperty } from '@nestjs/swagger';
import { IsBoolean } from 'class-validator';
import { bodyProperty } from '../body/body-property';

export interface BooleanPropertyOptions {
  /** May be absent (never null: `"done": null` is "done must be true or false"). Required by default. */
  readonly optional?: boolean;
}

/**
 * A true/false property of a request body (a `BOOLEAN` column on PostgreSQL, an `INTEGER` 0/1 on SQLite), documented as a
 * boolean: "done is required" when absent (or null, if required), "done must be true or false" for
 * anything else ("true", 1), the webhooks' wording. Describe it with a JSDoc comment (and `@example`).
 */
export function BooleanProperty({ optional = false }: BooleanPropertyOptions = {}): PropertyDecorator {
  const rules = [
    IsBoolean({ message: '$property must be true or false' }),
    ApiProperty({ type: 'boolean', required: !optional }),
  ];
  return bodyProperty(optional, rules);
}
