import { NestFastifyApplication } from '@nestjs/platform-fastify';
import { SwaggerModule } from '@nestjs/swagger';
import { AccessTokenVerifier } from './auth/access-token.verifier';
import { authenticateBeforeBody } from './auth/authenticate-before-body.hook';
import { AppConfig } from './config/app-config';
import { parseJsonBody } from './http/json-body.parser';
import { createOpenApiDocument } from './openapi/openapi-document';

/**
 * Everything about the app that is not a provider: the body parser, the early auth hook and
 * the docs. `main.ts` and the tests both call it, so tests run what ships.
 */
export function configureApp(app: NestFastifyApplication): NestFastifyApplication {
  const { bodyLimit } = app.get(AppConfig);
  const fastify = app.getHttpAdapter().getInstance();

  // Only JSON is accepted: any other content type (text/plain included) is a 415.
  fastify.removeAllContentTypeParsers();
  app.useBodyParser('application/json', { bodyLimit }, (_request, body, done) => {
    try {
      done(null, parseJsonBody(body));
    } catch (error) {
      done(error as Error, undefined);
    }
  });
  authenticateBeforeBody(fastify, app.get(AccessTokenVerifier));

  SwaggerModule.setup('docs', app, createOpenApiDocument(app), {
    jsonDocumentUrl: 'docs-json',
    yamlDocumentUrl: 'docs-yaml',
    swaggerOptions: { persistAuthorization: true },
  });
  return app;
}
