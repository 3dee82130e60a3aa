import { ArgumentMetadata, BadRequestException, ValidationError, ValidationPipe } from '@nestjs/common';
import { withoutStack } from '../errors/without-stack';

/**
 * The global `ValidationPipe`: unknown properties are dropped (not refused), nothing is coerced,
 * each field reports its first violation, and all of them are joined into one readable message.
 */
export class RequestValidationPipe extends ValidationPipe {
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

  override async transform(value: unknown, metadata: ArgumentMetadata): Promise<unknown> {
    // Every body of this API is required; the stock pipe would validate a missing one as {}.
    if (metadata.type === 'body' && value === undefined) {
      throw withoutStack(() => new BadRequestException('Request body is required: send a JSON object'));
    }
    return super.transform(value, metadata);
  }
}

function messagesOf(errors: ValidationError[]): string[] {
  return errors.flatMap((error) => [...Object.values(error.constraints ?? {}), ...messagesOf(error.children ?? [])]);
}
