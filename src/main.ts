import { Logger } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { FastifyAdapter, NestFastifyApplication } from '@nestjs/platform-fastify';
import { AppModule } from './app.module';
import { configureApp } from './app.setup';
import { ConfigError } from './config/config.error';
import { loadConfig } from './config/load-config';

async function bootstrap(): Promise<void> {
  const config = loadConfig(process.env);
  const app = await NestFactory.create<NestFastifyApplication>(AppModule.forRoot(config), new FastifyAdapter(), {
    abortOnError: false,
  });
  configureApp(app);
  await app.listen({ port: config.port, host: config.host });
  new Logger('PlantStore').log(`Listening on ${await app.getUrl()}; API docs at /docs`);
}

bootstrap().catch((error: unknown) => {
  // One line for the operator: what is wrong, never a stack trace or a secret.
  const reason = error instanceof ConfigError ? error.message : `Start-up failed: ${(error as Error).message}`;
  console.error(reason);
  process.exit(1);
});
