import { INestApplication } from '@nestjs/common';
import { DocumentBuilder, OpenAPIObject, PathItemObject, SwaggerModule } from '@nestjs/swagger';
import { API_VERSION } from '../common/api-version';
import { declareServiceResponses } from './service-responses';

export const BEARER_SCHEME = 'bearer';

/** What the features add to the document beyond their routes: the webhooks they send, and the models those use. */
export interface DocumentExtras {
  // eslint-disable-next-line @typescript-eslint/no-unsafe-function-type -- @nestjs/swagger's own type for a model class.
  readonly extraModels?: Function[];
  readonly webhooks?: Record<string, PathItemObject>;
}

/**
 * The OpenAPI 3.1 document of the service, generated from its controllers and DTOs, plus what the
 * features declare beyond their routes (`extras`: the webhooks they send).
 */
export function createOpenApiDocument(app: INestApplication, extras: DocumentExtras = {}): OpenAPIObject {
  const config = new DocumentBuilder()
    .setOpenAPIVersion('3.1.0')
    .setTitle('Plant Store')
    .setDescription(
      'A plant store interface: clients add plants by sending a plant description, list them a page ' +
        'at a time (follow the `Link: rel="next"` header), read one by id and delete one. Ids are int64, ' +
        'exact over the whole range. ' +
        'Every plants operation needs `Authorization: Bearer <token>`; the health checks ' +
        '(`/health/live`, `/health/ready`) are public, for probes. Every failure has an `Error` body ' +
        'whose `error` is the HTTP status. Webhook endpoints (WEBHOOK_URLS, or the admin API) receive a ' +
        'webhook for each event type they subscribe to (by default `plant.created`: the `newPlant` webhook).',
    )
    .setVersion(API_VERSION)
    // The document is served by the service itself (/docs-json): its operations are relative to it.
    .addServer('/', 'This deployment (production or development, whichever serves this document)')
    .addTag('plants', 'The plant store: create, list, read and delete plants.')
    .addTag('webhooks', 'Subscribers of the webhooks: endpoints, their secrets and their delivery log (admin).')
    .addTag('health', 'Probes for the orchestrator: public, never rate limited.')
    .addBearerAuth({ type: 'http', scheme: 'bearer', bearerFormat: undefined }, BEARER_SCHEME)
    .addSecurityRequirements(BEARER_SCHEME)
    .build();
  const document = declareServiceResponses(
    SwaggerModule.createDocument(app, config, { extraModels: extras.extraModels ?? [] }),
  );
  // Public, not internal (OWASP API9: every server states its audience).
  document.servers = document.servers?.map((server) => ({ ...server, 'x-internal': false }));
  // package.json's `UNLICENSED`: no licence is granted (SPDX has no identifier for that; a LicenseRef names it).
  // (OpenAPI 3.1's `identifier`, which @nestjs/swagger's 3.0 types lack.)
  const license = { name: 'UNLICENSED (proprietary)', identifier: 'LicenseRef-UNLICENSED' };
  document.info.license = license;
  return extras.webhooks === undefined ? document : { ...document, webhooks: extras.webhooks };
}
