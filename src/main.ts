import { Logger } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { FastifyAdapter, NestFastifyApplication } from '@nestjs/platform-fastify';
import { AppModule } from './app.module';
import { AccessTokenVerifier } from './auth/access-token.verifier';
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
  const url = await app.getUrl();
  const logger = new Logger('PlantStore');
  const token = app.get(AccessTokenVerifier).developmentToken;
  if (token !== undefined) {
    const port = new URL(url).port;
    logger.warn(
      `Development token: ${token}\n  curl -X POST http://localhost:${port}/plants -H "Authorization: Bearer ${token}" -H "Content-Type: application/json" -d '{"id": 1, "name": "Monstera", "tag": "tropical"}'`,
    );
  }
  logger.log(`Listening on ${url}; API docs at /docs`);
  closeOnSignals(app, logger);
}

/** SIGTERM/SIGINT: stop taking connections, let requests in flight finish, close the store, exit 0. */
function closeOnSignals(app: NestFastifyApplication, logger: Logger): void {
  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    process.once(signal, () => {
      logger.log(`${signal} received: closing`);
      app.close().then(
        () => process.exit(0),
        (error: unknown) => {
          console.error(`Shutdown failed: ${(error as Error).message}`);
          process.exit(1);
        },
      );
    });
  }
}

bootstrap().catch((error: unknown) => {
  // One line for the operator: what is wrong, never a stack trace or a secret.
  const reason = error instanceof ConfigError ? error.message : `Start-up failed: ${(error as Error).message}`;
  console.error(reason);
  process.exit(1);
});
