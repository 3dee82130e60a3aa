import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DynamicModule, LoggerService, Type } from '@nestjs/common';
import { NestFastifyApplication } from '@nestjs/platform-fastify';
import { Test } from '@nestjs/testing';
import { AppModule } from '../../src/app.module';
import { configureApp, createFastifyAdapter } from '../../src/app.setup';
import { loadConfig } from '../../src/config/load-config';
import { shutDownGracefully } from '../../src/lifecycle/graceful-shutdown';
import { WebhooksModule } from '../../src/webhooks/webhooks.module';

export type ModuleImport = NonNullable<DynamicModule['imports']>[number];

export const TEST_TOKEN = 'test-token-0123456789';
/** The METRICS_TOKENS of every test app unless a test says otherwise: a scrape job's token, for `/metrics` only. */
export const TEST_METRICS_TOKEN = 'test-metrics-token-0123456789abcdef';
/**
 * The WEBHOOK_SECRETS_KEY of tests on PostgreSQL, where an admin credential requires one (on SQLite
 * outside production the service makes its own in DATA_DIR). A test's own value, '' for none, wins.
 */
export const TEST_SECRETS_KEY = Buffer.alloc(32, 0x5a).toString('base64');

export interface TestApp {
  app: NestFastifyApplication;
  /** Base URL of the listening server, e.g. http://127.0.0.1:41234 */
  url: string;
  dataDir: string;
  logs: string[];
  /** Closes the app; the data folder stays until `destroy`. */
  close(): Promise<void>;
  /** Closes the app and removes its data folder. */
  destroy(): Promise<void>;
}

/** Collects what the app logs, so tests can assert what reaches the log (and what does not). */
class CapturingLogger implements LoggerService {
  constructor(private readonly lines: string[]) {}
  log(message: unknown) {
    this.lines.push(String(message));
  }
  error(message: unknown, ...rest: unknown[]) {
    this.lines.push([message, ...rest].map(String).join(' '));
  }
  warn(message: unknown) {
    this.lines.push(String(message));
  }
  debug() {}
  verbose() {}
}

/**
 * Builds the real AppModule on Fastify, configured by `configureApp` like production, on a fresh
 * SQLite file in a temporary folder, listening on 127.0.0.1 on a free port. `controllers` are added
 * beside the app's own, for a test that needs a kind of route the app does not have; `features` are
 * modules added beside the app's own, given the app's webhook module (as `PlantsModule.register` is).
 */
export async function createTestApp(
  env: NodeJS.ProcessEnv = {},
  dataDir?: string,
  controllers: Type[] = [],
  features: (webhooks: ModuleImport) => ModuleImport[] = () => [],
): Promise<TestApp> {
  const dir = dataDir ?? mkdtempSync(join(tmpdir(), 'plant-store-test-'));
  const config = loadConfig({
    AUTH_TOKENS: TEST_TOKEN,
    METRICS_TOKENS: TEST_METRICS_TOKEN,
    DATABASE_URL: `sqlite:${join(dir, 'plants.db')}`,
    DATA_DIR: dir,
    LOG_LEVEL: 'silent',
    ...(env.DATABASE_URL?.startsWith('postgres') ? { WEBHOOK_SECRETS_KEY: TEST_SECRETS_KEY } : {}),
    ...env,
  });
  const root = AppModule.forRoot(config);
  const webhooks = root.imports!.find((imported) => (imported as DynamicModule).module === WebhooksModule)!;
  const moduleRef = await Test.createTestingModule({ imports: [root, ...features(webhooks)], controllers }).compile();
  const logs: string[] = [];
  const app = moduleRef.createNestApplication<NestFastifyApplication>(createFastifyAdapter(config), {
    logger: new CapturingLogger(logs),
  });
  await configureApp(app);
  await app.listen({ port: 0, host: '127.0.0.1' });
  const url = await app.getUrl();
  let closed = false;
  const close = async () => {
    if (!closed) await shutDownGracefully(app, 10000);
    closed = true;
  };
  return {
    app,
    url,
    dataDir: dir,
    logs,
    close,
    destroy: async () => {
      await close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
