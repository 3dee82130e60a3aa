import { ArgumentMetadata, BadRequestException, Type } from '@nestjs/common';
import { FastifyAdapter } from '@nestjs/platform-fastify';
import { DocumentBuilder, SwaggerModule } from '@nestjs/swagger';
import { Test } from '@nestjs/testing';
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

/** The schema the OpenAPI document declares for `model` (a New… DTO), as `SwaggerModule` builds it for the service. */
export async function documentedSchema(model: Type): Promise<unknown> {
  const app = (await Test.createTestingModule({}).compile()).createNestApplication(new FastifyAdapter());
  await app.init();
  try {
    const document = SwaggerModule.createDocument(app, new DocumentBuilder().build(), { extraModels: [model] });
    return document.components?.schemas?.[model.name];
  } finally {
    await app.close();
  }
}
