import { INestApplication } from '@nestjs/common';
import { OpenAPIObject } from '@nestjs/swagger';
import { createOpenApiDocument } from './openapi/openapi-document';
import { NewPlantDto } from './plants/dto/new-plant.dto';
import { NEW_PLANT_WEBHOOK } from './webhooks/new-plant.webhook';

/** The service's document: its routes, and the `newPlant` webhook it sends (a NewPlant body). */
export function createApiDocument(app: INestApplication): OpenAPIObject {
  return createOpenApiDocument(app, { extraModels: [NewPlantDto], webhooks: { newPlant: NEW_PLANT_WEBHOOK } });
}
