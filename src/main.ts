// First: tracing, when on, must patch http, pg, undici and Fastify before anything loads them.
import { shutdownTracing } from './tracing/tracing';
import { Logger, LoggerService } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { NestFastifyApplication } from '@nestjs/platform-fastify';
import { Logger as PinoLogger } from 'nestjs-pino';
import { AppModule } from './app.module';
import { configureApp, createFastifyAdapter } from './app.setup';
import { AccessTokenVerifier } from './auth/access-token.verifier';
import { ConfigError } from './config/config.error';
import { loadConfig } from './config/load-config';
import { Database } from './database/database';
import { shutDownGracefully } from './lifecycle/graceful-shutdown';
import { flushLogLines } from './logging/logging.module';
import { startupSummary } from './logging/startup-summary';

async function bootstrap(): Promise<void> {
  const config = loadConfig(process.env);
  const app = await NestFactory.create<NestFastifyApplication>(
    AppModule.forRoot(config),
    createFastifyAdapter(config),
    {
      abortOnError: false,
      bufferLogs: true,
    },
  );
  app.useLogger(withoutPrematureReadyLine(app.get(PinoLogger)));
  app.flushLogs();
  await configureApp(app);
  await app.listen({ port: config.port, host: config.host });
  const url = await app.getUrl();
  const logger = new Logger('PlantStore');
  const token = app.get(AccessTokenVerifier).developmentToken;
  if (token !== undefined) {
    logger.warn(
      `Development token: ${token}\n  curl -X POST ${url}/plants -H "Authorization: Bearer ${token}" -H "Content-Type: application/json" -d '{"id": 1, "name": "Monstera", "tag": "tropical"}'`,
    );
  }
  logger.log(
    startupSummary(config, {
      database: app.get(Database),
      address: app.getHttpServer().address(),
      developmentToken: token !== undefined,
    }),
  );
  logger.log(`API docs at ${url}/docs`);
  closeOnSignals(app, logger, config.timeouts.shutdownMs);
}

/**
 * SIGTERM/SIGINT: readiness 503 and webhook sends aborted at once, stop taking connections, let
 * requests in flight finish, close the store, exit 0 (`shutDownGracefully`). Past `timeoutMs`, which
 * that order keeps it well inside, it gives up waiting and exits 1.
 */
function closeOnSignals(app: NestFastifyApplication, logger: Logger, timeoutMs: number): void {
  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    process.once(signal, () => {
      logger.log(`${signal} received: finishing requests in flight, then closing`);
      setTimeout(() => {
        logger.error(`Shutdown did not finish within ${timeoutMs} ms; exiting`);
        flushLogLines();
        process.exit(1);
      }, timeoutMs).unref();
      shutDownGracefully(app, timeoutMs).then(
        async () => {
          // The last spans (the shutdown's own sends among them) leave before the exit; then what
          // became of them all, loudly if any was lost.
          const spans = await shutdownTracing();
          if (spans?.flushError !== undefined) logger.warn(`Could not flush the last traces: ${spans.flushError}`);
          if (spans !== undefined) {
            const line = `Traces: ${spans.exported} spans exported, ${spans.dropped} dropped (span queue full), ${spans.failed} not accepted by the collector`;
            if (spans.dropped + spans.failed > 0) logger.warn(line);
            else logger.log(line);
          }
          logger.log('Shutdown complete');
          // Every line still held by the logger's asynchronous destination is written now; then exit
          // once nothing else holds the process, at the latest in 100 ms.
          flushLogLines();
          setTimeout(() => process.exit(0), 100).unref();
        },
        (error: unknown) => {
          flushLogLines();
          console.error(`Shutdown failed: ${(error as Error).message}`);
          process.exit(1);
        },
      );
    });
  }
}

/**
 * Nest logs "Nest application successfully started" when its modules are initialised, before the
 * port is bound: with the port taken, that line came just before the failure. The start-up summary,
 * logged once listening, is the real "started" line; this one is left out.
 */
function withoutPrematureReadyLine(logger: LoggerService): LoggerService {
  return new Proxy(logger, {
    get(target, property, receiver) {
      const value = Reflect.get(target, property, receiver) as unknown;
      if (property !== 'log' || typeof value !== 'function') return value;
      return (message: unknown, ...rest: unknown[]) => {
        if (message === NEST_READY_LINE) return;
        (value as (...args: unknown[]) => void).call(target, message, ...rest);
      };
    },
  });
}
const NEST_READY_LINE = 'Nest application successfully started';

/** What to do when the port is taken, or undefined for any other error. */
function addressInUse(error: unknown): string | undefined {
  const { code, address, port } = error as { code?: string; address?: string; port?: number };
  if (code !== 'EADDRINUSE') return undefined;
  return `port ${port} on ${address} is already in use: stop what listens there, or set PORT (and HOST) to a free one`;
}

// A fatal error (an exception nothing caught) ends the process: the lines the logger still holds are
// written first, before Node prints the error.
process.on('uncaughtExceptionMonitor', flushLogLines);

bootstrap().catch((error: unknown) => {
  // One line for the operator: what is wrong, never a stack trace or a secret.
  const reason =
    error instanceof ConfigError
      ? error.message
      : `Start-up failed: ${addressInUse(error) ?? (error as Error).message}`;
  flushLogLines();
  console.error(reason);
  // Let the logger drain what it buffered (the retries that led here); force the exit if something lingers.
  process.exitCode = 1;
  setTimeout(() => process.exit(1), 1000).unref();
});
