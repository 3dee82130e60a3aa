import { applyDecorators } from '@nestjs/common';
import { IsDefined, ValidateIf } from 'class-validator';

/**
 * A request body's property from its preset's `rules`, applied in their order (class-validator checks
 * them in it and the pipe reports the first that fails), then required ("<property> is required" when
 * absent or null) or optional (checked only when present: `null` meets the rules and fails them).
 */
export function bodyProperty(optional: boolean, rules: readonly PropertyDecorator[]): PropertyDecorator {
  return (target, property) =>
    applyDecorators(
      ...rules,
      optional
        ? ValidateIf((body: Record<string | symbol, unknown>) => body[property] !== undefined)
        : IsDefined({ message: '$property is required' }),
    )(target, property);
}
