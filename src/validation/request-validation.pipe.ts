import { ArgumentMetadata, BadRequestException, ValidationError } from '@nestjs/common';
import { withoutStack } from '../common/errors/without-stack';
import { CompiledValidationPipe } from './compiled-validation.pipe';
import { isOptionalBody } from './optional-body.decorator';

/**
 * The global `ValidationPipe`: unknown properties are dropped (not refused), nothing is coerced,
 * each field reports its first violation, and all of them are joined into one readable message.
 *
 * It is Nest's `ValidationPipe` with the DTO's rules compiled (`CompiledValidationPipe`): the same
 * answers, for a fraction of the CPU.
 */
export class RequestValidationPipe extends CompiledValidationPipe {
  constructor() {
    super({
      whitelist: true,
      forbidNonWhitelisted: false,
      transform: true,
      transformOptions: { enableImplicitConversion: false },
      stopAtFirstError: true,
      validationError: { target: false, value: false },
      exceptionFactory: (errors) => withoutStack(() => new BadRequestException(messagesOf(errors).join('; '))),
    });
  }

  override transform(value: unknown, metadata: ArgumentMetadata): Promise<unknown> {
    // A bigint parameter is its own pipe's (`toValidate` below), and the stock pipe hands it on as
    // it is: here at once, without the two async layers under this one (a path id is read on every
    // GET and DELETE).
    if ((metadata.metatype as unknown) === BigInt) return Promise.resolve(value);
    // A body is required unless its DTO says otherwise (@OptionalBody): the stock pipe would
    // validate a missing one as {} everywhere.
    if (metadata.type === 'body' && value === undefined) {
      if (!isOptionalBody(metadata.metatype)) {
        return Promise.reject(
          withoutStack(() => new BadRequestException('Request body is required: send a JSON object')),
        );
      }
      value = {};
    }
    return super.transform(value, metadata);
  }

  /**
   * A `bigint` parameter is a value, not a DTO: its own pipe (`ParseInt64Pipe`) reads it, after this
   * one. Left to the stock rule, class-transformer would try to build a BigInt instance from the text.
   */
  protected override toValidate(metadata: ArgumentMetadata): boolean {
    return (metadata.metatype as unknown) !== BigInt && super.toValidate(metadata);
  }
}

/**
 * Each violation's message, prefixed with the path of the property it is about when that property
 * is nested (`address.city must be a string`, `items.0.name must be a string`): class-validator
 * words a nested rule's message with the leaf's name alone.
 */
function messagesOf(errors: ValidationError[], parentPath = '', messages: string[] = []): string[] {
  for (const error of errors) {
    for (const message of Object.values(error.constraints ?? {})) {
      messages.push(parentPath === '' ? message : `${parentPath}.${message}`);
    }
    if (error.children?.length) {
      messagesOf(error.children, parentPath === '' ? error.property : `${parentPath}.${error.property}`, messages);
    }
  }
  return messages;
}
