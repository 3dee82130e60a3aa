import { INestApplication } from '@nestjs/common';
import { DocumentBuilder, OpenAPIObject, SwaggerModule } from '@nestjs/swagger';

export const BEARER_SCHEME = 'bearer';
/** The interface's version: `info.version` of the document, and in the webhook's User-Agent. */
export const API_VERSION = '1.0.0';

/** The OpenAPI document of the service, generated from its controllers and DTOs. */
export function createOpenApiDocument(app: INestApplication): OpenAPIObject {
  const config = new DocumentBuilder()
    .setTitle('Plant Store')
    .setDescription(
      'A plant store interface: clients add plants by sending a plant description, list them a page ' +
        'at a time (follow the `Link: rel="next"` header), read one by id and delete one. Ids are int64, ' +
        'exact over the whole range. ' +
        'Every operation needs `Authorization: Bearer <token>`. Every failure has an `Error` body ' +
        'whose `error` is the HTTP status.',
    )
    .setVersion(API_VERSION)
    .addBearerAuth({ type: 'http', scheme: 'bearer', bearerFormat: undefined }, BEARER_SCHEME)
    .addSecurityRequirements(BEARER_SCHEME)
    .build();
  return SwaggerModule.createDocument(app, config);
}
