import { ArgumentMetadata, BadRequestException, Type } from '@nestjs/common';
import { RequestValidationPipe } from '../../src/validation/request-validation.pipe';

/**
 * A DTO's validation as the service runs it (`RequestValidationPipe`, compiled or stock): `validate`
 * resolves with the body handed on, `messageFor` with the 400's message (and fails if it is accepted).
 */
export function bodyValidation(mode: 'compiled' | 'stock', metatype: Type) {
  const pipe = new RequestValidationPipe(mode);
  const metadata: ArgumentMetadata = { type: 'body', metatype, data: '' };
  const validate = async (body: unknown) => pipe.transform(body, metadata);
  const messageFor = async (body: unknown): Promise<string> => {
    try {
      await validate(body);
    } catch (error) {
      expect(error).toBeInstanceOf(BadRequestException);
      return (error as Error).message;
    }
    throw new Error('the body was accepted');
  };
  return { validate, messageFor };
}
