import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { NestFactory } from '@nestjs/core';
import { FastifyAdapter, NestFastifyApplication } from '@nestjs/platform-fastify';
import { createApiDocument } from './api-document';
import { AppModule } from './app.module';
import { loadConfig } from './config/load-config';

/**
 * `npm run openapi`: writes the generated document to openapi.json at the repository root.
 * The app is created but never initialised, so no database is opened and no token is made.
 */
async function generate(): Promise<void> {
  const config = loadConfig({ AUTH_TOKENS: 'unused', LOG_LEVEL: 'silent' });
  const app = await NestFactory.create<NestFastifyApplication>(AppModule.forRoot(config), new FastifyAdapter(), {
    logger: false,
  });
  const file = join(__dirname, '..', 'openapi.json');
  writeFileSync(file, `${JSON.stringify(createApiDocument(app), null, 2)}\n`);
  await app.close();
  console.log(`Wrote ${file}`);
}

void generate();
