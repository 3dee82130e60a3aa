import { ApiProperty } from '@nestjs/swagger';
import { IsString, Matches, MaxLength } from 'class-validator';
import { bodyProperty } from '../body/body-property';
import { IsUnicodeText } from '../text/text-property.decorator';

export interface PatternPropertyOptions {
  /**
   * What the whole value must match, written `^…$`: it is the document's `pattern` as it is, which
   * JSON Schema reads with Unicode semantics and without flags, so only the `u` flag is allowed.
   */
  readonly pattern: RegExp;
  /** The most characters it may hold, checked before the pattern. */
  readonly max: number;
  /** What a value is, for the 400: "country must be <what>"; "country must match ^[A-Z]{2}$" without it. */
  readonly what?: string;
  /** May be absent (never null: `"country": null` is "country must be a string"). Required by default. */
  readonly optional?: boolean;
}

/**
 * A string property of a request body that matches a pattern (a code, a reference, a slug), documented
 * with the pattern and `maxLength`. Each violation answers one message naming the property, checked in
 * this order: "country is required", "country must be a string", "country must be at most 2
 * characters long", "country must be Unicode text without NUL characters", "country must match
 * ^[A-Z]{2}$" (or "country must be <what>"). Refused when the DTO is declared: a pattern that does not
 * hold the whole value (`^a|b$` matches any text that starts with "a"), flags the document cannot
 * carry (`i`: spell the case out, `[A-Za-z]`), a pattern invalid with the `u` flag. Describe it with a
 * JSDoc comment (and `@example`).
 */
export function PatternProperty({ pattern, max, what, optional = false }: PatternPropertyOptions): PropertyDecorator {
  const refused =
    patternProblem(pattern) ?? (Number.isInteger(max) && max > 0 ? undefined : `max ${max} must be a positive integer`);
  if (refused !== undefined) throw new Error(`PatternProperty: ${refused}`);
  const rules = [
    IsString({ message: '$property must be a string' }),
    MaxLength(max, { message: `$property must be at most ${max} characters long` }),
    IsUnicodeText(),
    Matches(pattern, {
      message: what === undefined ? `$property must match ${pattern.source}` : `$property must be ${what}`,
    }),
    ApiProperty({ type: 'string', required: !optional, maxLength: max, pattern: pattern.source }),
  ];
  return bodyProperty(optional, rules);
}

/** Why `pattern` cannot be a document's `pattern` that holds the whole value, or undefined. */
export function patternProblem(pattern: RegExp): string | undefined {
  if (pattern.flags.replace('u', '') !== '') {
    return `the pattern /${pattern.source}/${pattern.flags} has flags the document cannot carry: only u`;
  }
  try {
    new RegExp(pattern.source, 'u');
  } catch {
    return `the pattern /${pattern.source}/ is not valid with the u flag, as JSON Schema reads it`;
  }
  if (!holdsWholeValue(pattern.source)) {
    return `the pattern /${pattern.source}/ must hold the whole value: ^ first, $ last, any | inside a group`;
  }
  return undefined;
}

/** Whether `source` is `^…$` with no `|` outside a group or a class: anchored at both ends as a whole. */
function holdsWholeValue(source: string): boolean {
  if (!source.startsWith('^') || !source.endsWith('$')) return false;
  let depth = 0;
  let inClass = false;
  for (let i = 0; i < source.length; i++) {
    const char = source[i];
    if (char === '\\') {
      if (++i === source.length - 1) return false; // the last `$` is escaped: a character, not the end
    } else if (inClass) {
      inClass = char !== ']';
    } else if (char === '[') {
      inClass = true;
    } else if (char === '(') {
      depth++;
    } else if (char === ')') {
      depth--;
    } else if (char === '|' && depth === 0) {
      return false;
    }
  }
  return true;
}
