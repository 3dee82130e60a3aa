import {
  ArgumentMetadata,
  BadRequestException,
  PipeTransform,
  ValidationError,
  ValidationPipe,
  ValidationPipeOptions,
} from '@nestjs/common';
import { withoutStack } from '../common/errors/without-stack';
import { ValidationPipeMode } from '../config/app-config';
import * as Compiled from './compiled-validation.pipe';
import { isOptionalBody } from './optional-body.decorator';

/**
 * The global pipe's validation: unknown properties are dropped (not refused), nothing is coerced,
 * each field reports its first violation, and all of them are joined into one readable message.
 */
export const REQUEST_VALIDATION: Readonly<ValidationPipeOptions> = Object.freeze<ValidationPipeOptions>({
  whitelist: true,
  forbidNonWhitelisted: false,
  transform: true,
  transformOptions: { enableImplicitConversion: false },
  stopAtFirstError: true,
  validationError: { target: false, value: false },
  exceptionFactory: (errors) => withoutStack(() => new BadRequestException(messagesOf(errors).join('; '))),
});

/**
 * The global pipe: Nest's `ValidationPipe` with `REQUEST_VALIDATION`, a body required unless its DTO
 * says otherwise, and a `bigint` parameter left to its own pipe. Its validation is the compiled one
 * (`CompiledValidationPipe`: the same answers, for a fraction of the CPU) unless `mode` is `stock`
 * (VALIDATION_PIPE): then the stock pipe itself, and the compiled module is never loaded, so the
 * class-transformer and class-validator paths it reads are never touched (README.md here).
 *
 * It holds the validation pipe rather than extending it, to answer at once where it can (a path
 * parameter, a valid or invalid flat body or query): the stock pipe's `transform` is `async`, and a
 * promise from a pipe costs its `async` frame and microtask turns, which stock Nest's router adds to
 * its own (docs/nest-router-proposal.md).
 * Not being a `ValidationPipe`, it does not get Nest's start-up warning for a handler without
 * `design:paramtypes` (a build without decorator metadata): `tsc` and ts-jest emit them.
 */
export class RequestValidationPipe implements PipeTransform<unknown, unknown> {
  private readonly validate: (value: unknown, metadata: ArgumentMetadata) => unknown;

  constructor(mode: ValidationPipeMode = 'compiled') {
    if (mode === 'stock') {
      const stock = new ValidationPipe(REQUEST_VALIDATION);
      this.validate = (value, metadata) => stock.transform(value, metadata);
    } else {
      // Loaded here, not imported: with VALIDATION_PIPE=stock the library internals stay unread.
      // eslint-disable-next-line @typescript-eslint/no-require-imports
      const { CompiledValidationPipe } = require('./compiled-validation.pipe') as typeof Compiled;
      const compiled = new CompiledValidationPipe(REQUEST_VALIDATION);
      this.validate = (value, metadata) => compiled.transformNow(value, metadata);
    }
  }

  transform(value: unknown, metadata: ArgumentMetadata): unknown {
    // A bigint parameter is a value, not a DTO: its own pipe (`ParseInt64Pipe`) reads it, after this
    // one. Left to the stock pipe, class-transformer would try to build a BigInt instance from the text.
    if ((metadata.metatype as unknown) === BigInt) return value;
    // A body is required unless its DTO says otherwise (@OptionalBody): the stock pipe would
    // validate a missing one as {} everywhere.
    if (metadata.type === 'body' && value === undefined) {
      if (!isOptionalBody(metadata.metatype)) {
        throw withoutStack(() => new BadRequestException('Request body is required: send a JSON object'));
      }
      value = {};
    }
    return this.validate(value, metadata);
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
