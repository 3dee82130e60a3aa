import { NotFoundException } from '@nestjs/common';
import { withoutStack } from '../errors/without-stack';

/**
 * How a create-once resource names itself, in its documentation and in the messages it answers.
 * `name` is the singular in lower-case words ("plant", "soil sample").
 */
export interface ResourceNameOptions {
  /** The indefinite article: "an" for a name starting with a vowel, "a" otherwise, unless set here ("an hour"). */
  readonly article?: 'a' | 'an';
  /** What a 409 says differs: "a different name or tag". By default "different content". */
  readonly differs?: string;
}

/** "soil sample" → "SoilSample": for operation ids and schema names. */
export function pascalName(name: string): string {
  return name
    .split(/[\s_-]+/)
    .filter((word) => word !== '')
    .map((word) => word[0].toUpperCase() + word.slice(1))
    .join('');
}

/** "plant" → "a plant", "orchid" → "an orchid". */
export function withArticle(name: string, options: ResourceNameOptions = {}): string {
  return `${options.article ?? (/^[aeiou]/i.test(name) ? 'an' : 'a')} ${name}`;
}

/** The 404 of a by-id route: "No plant with id 10". */
export function notFoundMessage(name: string, id: bigint | number | string): string {
  return `No ${name} with id ${id}`;
}

/** The 409 of a create: "A plant with id 10 already exists with a different name or tag". */
export function conflictMessage(name: string, id: bigint | number | string, options: ResourceNameOptions = {}): string {
  const subject = withArticle(name, options);
  return `${subject[0].toUpperCase()}${subject.slice(1)} with id ${id} already exists with ${options.differs ?? 'different content'}`;
}

/** The exception a service throws when no resource has this id: a 404 with `notFoundMessage`, no stack captured. */
export function resourceNotFound(name: string, id: bigint | number | string): NotFoundException {
  return withoutStack(() => new NotFoundException(notFoundMessage(name, id)));
}
