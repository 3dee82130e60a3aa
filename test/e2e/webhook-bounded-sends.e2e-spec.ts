import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, Server, ServerResponse } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { eventually } from '../support/eventually';
import { request } from '../support/http';
import { createTestSchema, describeOnEachStore, TestSchema } from '../support/postgres';
import { ServiceProcess, startService } from '../support/service-process';
import { makeSecret } from '../support/webhook-receiver';

const TOKEN = 'bounded-sends-token';
const EVENTS = 3;

/** A receiver that answers 200 at once, then trickles its body a byte every 100 ms, forever. */
class TricklingReceiver {
  /** Every connection that carried a request, and whether it is closed yet. */
  readonly connections: { closed: boolean }[] = [];
  private readonly responses = new Set<ServerResponse>();
  private readonly server: Server;
  port = 0;

  constructor() {
    this.server = createServer((request, response) => {
      const connection = { closed: false };
      this.connections.push(connection);
      request.socket.once('close', () => (connection.closed = true));
      request.resume();
      request.on('end', () => {
        response.writeHead(200, { 'content-type': 'text/plain' });
        const timer = setInterval(() => response.write('.'), 100);
        this.responses.add(response);
        response.on('close', () => {
          clearInterval(timer);
          this.responses.delete(response);
        });
      });
    });
  }

  async start(): Promise<void> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.port = (this.server.address() as { port: number }).port;
  }

  async stop(): Promise<void> {
    for (const response of this.responses) response.destroy();
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

describeOnEachStore('bounded webhook sends (e2e on %s, node dist/main.js)', (postgres) => {
  const secret = makeSecret();
  let receiver: TricklingReceiver;
  let service: ServiceProcess | undefined;
  let dir: string;
  let schema: TestSchema | undefined;

  beforeEach(async () => {
    receiver = new TricklingReceiver();
    await receiver.start();
    dir = mkdtempSync(join(tmpdir(), 'plant-store-bounded-'));
    schema = postgres ? await createTestSchema() : undefined;
  });
  afterEach(async () => {
    await service?.stop('SIGKILL');
    service = undefined;
    await receiver.stop();
    await schema?.drop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('should end each attempt to a receiver that trickles its answer as a timeout, and close its connection', async () => {
    service = await startService({
      DATABASE_URL: schema ? schema.url : `sqlite:${join(dir, 'plants.db')}`,
      DATA_DIR: dir,
      AUTH_TOKENS: TOKEN,
      WEBHOOK_URLS: `http://127.0.0.1:${receiver.port}/hooks/plants`,
      WEBHOOK_SECRET: secret,
      WEBHOOK_ALLOWED_NETWORKS: '127.0.0.0/8,::1/128',
      WEBHOOK_TIMEOUT_MS: '500',
      // No second attempt while the test looks: each event is sent once.
      WEBHOOK_RETRY_SCHEDULE: '1h',
      WEBHOOK_POLL_INTERVAL_MS: '100',
    });
    for (let id = 1; id <= EVENTS; id++) {
      const created = await request(`${service.url}/plants`, {
        body: `{"id":${id},"name":"Fern"}`,
        auth: `Bearer ${TOKEN}`,
      });
      expect(created.status).toBe(200);
    }

    // Each attempt ends as a timeout, although the status (200) came at once…
    const timedOut = () =>
      service!.logs().filter((line) => /failed \(attempt 1: no answer within 500 ms\)/.test(String(line.msg)));
    await eventually(() => timedOut().length === EVENTS, 15000);
    expect(receiver.connections.length).toBeGreaterThanOrEqual(EVENTS);
    // …and its connection is closed while the service runs on: no body is drained in the background.
    await eventually(() => receiver.connections.every((connection) => connection.closed), 15000);
  });
});
