import { execFile } from 'node:child_process';
import { copyFileSync, mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { createTestApp, TestApp } from '../support/test-app';
import { LOOPBACK_NETWORKS } from '../support/webhook-receiver';

const run = promisify(execFile);
const ROOT = join(__dirname, '..', '..');
// Inside the repository (git-ignored), so the program finds openapi-fetch in node_modules.
const OUT = join(ROOT, 'test-output', 'typed-client');
const ADMIN = 'typed-client-admin-token-0123456789';

describe('the typed client generated from openapi.json (e2e)', () => {
  let server: TestApp;

  beforeAll(async () => {
    rmSync(OUT, { recursive: true, force: true });
    mkdirSync(OUT, { recursive: true });
    copyFileSync(join(ROOT, 'test', 'typed-client', 'manage-endpoints.ts'), join(OUT, 'manage-endpoints.ts'));
    // The types, as a client team makes them: openapi-typescript from the committed document.
    await run(process.execPath, [
      join(ROOT, 'node_modules', 'openapi-typescript', 'bin', 'cli.js'),
      join(ROOT, 'openapi.json'),
      '--output',
      join(OUT, 'plant-store.d.ts'),
    ]);
    server = await createTestApp({ ADMIN_TOKENS: ADMIN, WEBHOOK_ALLOWED_NETWORKS: LOOPBACK_NETWORKS });
  }, 60_000);
  afterAll(async () => {
    await server?.destroy();
    rmSync(OUT, { recursive: true, force: true });
  });

  it('should type-check a client that manages endpoints, and run it against the service', async () => {
    // Strict type-check and compile: a route, a body or an answer the document gets wrong fails here.
    await run(process.execPath, [
      join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc'),
      '--ignoreConfig',
      '--strict',
      '--module',
      'commonjs',
      '--target',
      'es2022',
      '--esModuleInterop',
      '--skipLibCheck',
      '--types',
      'node',
      '--typeRoots',
      join(ROOT, 'node_modules', '@types'),
      '--outDir',
      join(OUT, 'dist'),
      join(OUT, 'manage-endpoints.ts'),
    ]).catch((error: Error & { stdout?: string }) => {
      throw new Error(`the typed client does not type-check:\n${error.stdout ?? error.message}`);
    });
    const { stdout } = await run(process.execPath, [join(OUT, 'dist', 'manage-endpoints.js')], {
      env: { ...process.env, BASE_URL: server.url, ADMIN_TOKEN: ADMIN, RECEIVER_URL: 'http://127.0.0.1:9/typed' },
    });
    const result = JSON.parse(stdout) as { id: string };
    expect(result).toEqual({
      id: expect.stringMatching(/^ep_/),
      secretsDiffer: true,
      secretMatches: true,
      listed: [result.id],
      read: { url: 'http://127.0.0.1:9/typed', source: 'api', disabled: false },
      patched: 'renamed',
      deliveries: 0,
      queued: 0,
      deleted: 204,
    });
  }, 60_000);
});
