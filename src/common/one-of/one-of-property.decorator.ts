import { ApiProperty } from '@nestjs/swagger';
import { IsIn } from 'class-validator';
import { bodyProperty } from '../body/body-property';

export interface OneOfPropertyOptions {
  /** The values it may take, each a non-empty string, in the order the document and the 400 list them. */
  readonly values: readonly string[];
  /** May be absent (never null: `"size": null` breaks its rule). Required by default. */
  readonly optional?: boolean;
}

/**
 * A string property of a request body that takes one of a list of values, documented as an `enum`.
 * Two messages, naming the property: "size is required" when absent (or null, if required), and
 * "size must be small, medium or large" for anything else (another string, a number, another case),
 * the configuration's wording. Describe it with a JSDoc comment (and `@example`).
 */
export function OneOfProperty({ values, optional = false }: OneOfPropertyOptions): PropertyDecorator {
  if (values.length === 0 || new Set(values).size !== values.length || values.some((value) => value === '')) {
    throw new Error(
      `OneOfProperty: the values (${values.join(', ')}) must be distinct non-empty strings, at least one`,
    );
  }
  const listed = values.length === 1 ? values[0] : `${values.slice(0, -1).join(', ')} or ${values[values.length - 1]}`;
  const rules = [
    IsIn([...values], { message: `$property must be ${listed}` }),
    ApiProperty({ type: 'string', required: !optional, enum: [...values] }),
  ];
  return bodyProperty(optional, rules);
}
