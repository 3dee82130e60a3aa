import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { eventually } from '../support/eventually';
import { request } from '../support/http';
import { createTestSchema, describeOnEachStore, TestSchema } from '../support/postgres';
import { ServiceProcess, startService } from '../support/service-process';
import { makeSecret, WebhookReceiver } from '../support/webhook-receiver';

const TOKEN = 'telemetry-origins-token';
// A Slack-style endpoint URL: its path and query hold the credential.
const SECRET_PATH = '/hooks/T000/B000/secretpart?token=abc';

/** A port on 127.0.0.1 where nothing listens (connections are refused). */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

describeOnEachStore(
  'telemetry shows endpoint origins only (e2e on %s, node dist/main.js, console exporter)',
  (postgres) => {
    const secret = makeSecret();
    let accepting: WebhookReceiver;
    let failing: WebhookReceiver;
    let service: ServiceProcess | undefined;
    let dir: string;
    let schema: TestSchema | undefined;

    beforeEach(async () => {
      accepting = new WebhookReceiver([secret]);
      failing = new WebhookReceiver([secret], () => 500);
      await Promise.all([accepting.start(), failing.start()]);
      dir = mkdtempSync(join(tmpdir(), 'plant-store-telemetry-'));
      schema = postgres ? await createTestSchema() : undefined;
    });
    afterEach(async () => {
      await service?.stop('SIGKILL');
      service = undefined;
      await Promise.all([accepting.stop(), failing.stop()]);
      await schema?.drop();
      rmSync(dir, { recursive: true, force: true });
    });

    it('should keep the path and query of endpoint URLs out of spans and logs, and show their host and port', async () => {
      const refused = await closedPort();
      const urls = [accepting.port, failing.port, refused].map((port) => `http://127.0.0.1:${port}${SECRET_PATH}`);
      service = await startService({
        DATABASE_URL: schema ? schema.url : `sqlite:${join(dir, 'plants.db')}`,
        DATA_DIR: dir,
        AUTH_TOKENS: TOKEN,
        WEBHOOK_URLS: urls.join(','),
        WEBHOOK_SECRET: secret,
        WEBHOOK_ALLOWED_NETWORKS: '127.0.0.0/8,::1/128',
        WEBHOOK_POLL_INTERVAL_MS: '100',
        OTEL_TRACES_EXPORTER: 'console',
        LOG_LEVEL: 'debug',
      });
      const created = await request(`${service.url}/plants`, {
        body: '{"id":1,"name":"Traced"}',
        auth: `Bearer ${TOKEN}`,
      });
      expect(created.status).toBe(200);
      // A success, a 500 and a refused connection: each attempt has its spans and its log line.
      await accepting.waitFor(() => accepting.accepted().length === 1);
      await failing.waitFor(() => failing.received.some((delivery) => delivery.answered === 500));
      const logged = (port: number) => () =>
        service!.logs().some((line) => String(line.msg).includes(`(127.0.0.1:${port})`));
      await eventually(logged(failing.port), 15000);
      await eventually(logged(refused), 15000);

      // SIGTERM flushes the spans still buffered.
      expect(await service.stop('SIGTERM')).toBe(0);
      const output = service.output();
      service = undefined;

      // No span (attribute, name, event, status) and no log line holds the path or the query.
      expect(output.split('\n').filter((line) => /secretpart|token=abc|\/hooks\/T000/.test(line))).toEqual([]);
      // The console exporter prints each span as an object of its own.
      const spans = output.split(/\n(?=\{\n)/);
      const named = (name: string) => spans.filter((span) => span.includes(`name: '${name}'`));
      for (const port of [accepting.port, failing.port, refused]) {
        // The HTTP client's span (undici): its origin as url.full, and the server's address and port.
        expect(named('POST').some((span) => span.includes(`'url.full': 'http://127.0.0.1:${port}'`))).toBe(true);
        // The delivery's span: the same origin.
        expect(
          named('webhook deliver').some(
            (span) =>
              span.includes("'url.scheme': 'http'") &&
              span.includes("'server.address': '127.0.0.1'") &&
              span.includes(`'server.port': ${port}`),
          ),
        ).toBe(true);
      }
      expect(output).toContain('ECONNREFUSED');
    });
  },
);
