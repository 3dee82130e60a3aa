import 'reflect-metadata';

const OPTIONAL_BODY = Symbol('optional-body');

/**
 * Marks a body DTO whose request may come without a body (or with `Content-Type: application/json`
 * and nothing after it): the route then gets the DTO of `{}`, validated like any other. Every
 * other body stays required (`RequestValidationPipe`). Declare it in the document with
 * `@ApiBody({ type, required: false })` on the route.
 */
export function OptionalBody(): ClassDecorator {
  return (target) => Reflect.defineMetadata(OPTIONAL_BODY, true, target);
}

export function isOptionalBody(type: unknown): boolean {
  return typeof type === 'function' && Reflect.getMetadata(OPTIONAL_BODY, type) === true;
}
