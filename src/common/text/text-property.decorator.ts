import { ApiProperty } from '@nestjs/swagger';
import { IsString, Length, Matches } from 'class-validator';
import { bodyProperty } from '../body/body-property';

// Unicode text: no NUL, and no unpaired surrogate (which no encoding can store).
// eslint-disable-next-line no-control-regex -- NUL is exactly what this rule refuses.
const TEXT = /^[^\u0000\uD800-\uDFFF]*$/u;

/**
 * The rule every stored string meets, whatever else its preset asks: no NUL (PostgreSQL's text refuses
 * it) and no unpaired surrogate. "name must be Unicode text without NUL characters".
 */
export const IsUnicodeText = (): PropertyDecorator =>
  Matches(TEXT, { message: '$property must be Unicode text without NUL characters' });

export interface TextPropertyOptions {
  /** The most characters it may hold. */
  readonly max: number;
  /** The fewest; 1 by default (no empty text). */
  readonly min?: number;
  /** May be absent (never null: `"tag": null` is "tag must be a string"). Required by default. */
  readonly optional?: boolean;
}

/**
 * A text property of a request body: a string of `min` (1) to `max` characters without NUL, documented
 * with those bounds. Each violation answers one message naming the property: "name is required",
 * "name must be a string", "name must be 1 to 200 characters long", "name must be Unicode text without
 * NUL characters", checked in that order. Describe it with a JSDoc comment (and `@example`).
 */
export function TextProperty({ max, min = 1, optional = false }: TextPropertyOptions): PropertyDecorator {
  // Applied in this order, the order of stacked decorators from the bottom up: class-validator checks
  // a property's rules in it and the pipe reports the first that fails, so the type check comes first.
  const rules = [
    IsString({ message: '$property must be a string' }),
    Length(min, max, { message: `$property must be ${min} to ${max} characters long` }),
    IsUnicodeText(),
    ApiProperty({ type: 'string', required: !optional, minLength: min, maxLength: max, pattern: TEXT.source }),
  ];
  return bodyProperty(optional, rules);
}
