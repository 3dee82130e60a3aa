import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { eventually } from '../support/eventually';
import { request } from '../support/http';
import { openRawConnection } from '../support/raw-http';
import { ServiceProcess, startService } from '../support/service-process';
import { makeSecret, WebhookReceiver } from '../support/webhook-receiver';

const TOKEN = 'shutdown-token';
const SHUTDOWN_TIMEOUT_MS = 4000;

/** A POST /plants whose body has not all been sent yet: `rest` finishes it. */
function partialCreate(body: string, sent: number): { head: string; rest: string } {
  return {
    head:
      `POST /plants HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer ${TOKEN}\r\n` +
      `Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body.slice(0, sent)}`,
    rest: body.slice(sent),
  };
}

// CONTRACT.md, "Shutdown": readiness 503 and no new connections at once, requests in flight finish,
// webhook sends in flight go back to pending, the database closes last, exit 0 within SHUTDOWN_TIMEOUT_MS
// whatever a subscriber or a client does.
describe('SIGTERM (e2e, node dist/main.js)', () => {
  const secret = makeSecret();
  let receiver: WebhookReceiver;
  let dir: string;
  let service: ServiceProcess | undefined;

  beforeEach(async () => {
    receiver = new WebhookReceiver([secret], () => 'hang');
    await receiver.start();
    dir = mkdtempSync(join(tmpdir(), 'plant-store-shutdown-'));
  });
  afterEach(async () => {
    await receiver.stop();
    await service?.stop('SIGKILL');
    service = undefined;
    rmSync(dir, { recursive: true, force: true });
  });

  const env = () => ({
    DATABASE_URL: `sqlite:${join(dir, 'plants.db')}`,
    DATA_DIR: dir,
    AUTH_TOKENS: TOKEN,
    WEBHOOK_URLS: receiver.url,
    WEBHOOK_SECRET: secret,
    WEBHOOK_POLL_INTERVAL_MS: '100',
    // The subscriber's timeout (15 s by default) is far beyond the shutdown's: it must not matter.
    SHUTDOWN_TIMEOUT_MS: String(SHUTDOWN_TIMEOUT_MS),
  });

  it('should drain first: readiness 503 and no new connections, requests in flight answered, a hanging send aborted, exit 0', async () => {
    service = await startService(env());
    const url = service.url;
    expect((await request(`${url}/plants`, { body: '{"id":1,"name":"Hung"}', auth: `Bearer ${TOKEN}` })).status).toBe(
      200,
    );
    await receiver.waitFor(() => receiver.received.length === 1);
    const hungWebhookId = receiver.received[0].webhookId;

    // Three connections that are mid-request when SIGTERM comes: a create whose body is half sent,
    // a readiness probe whose headers are not finished, and a client that will never finish its body.
    const create = partialCreate('{"id":2,"name":"In flight"}', 5);
    const inFlight = await openRawConnection(url, create.head);
    const probe = await openRawConnection(url, 'GET /health/ready HTTP/1.1\r\nHost: localhost\r\n');
    const stalled = await openRawConnection(url, partialCreate('{"id":3,"name":"Never finished"}', 4).head);

    const started = Date.now();
    const exited = service.stop('SIGTERM');
    await eventually(() => service!.output().includes('SIGTERM received'));
    // No new connection is accepted.
    await eventually(() =>
      fetch(`${url}/health/live`).then(
        () => false,
        () => true,
      ),
    );
    probe.write('\r\n');
    inFlight.write(create.rest);

    expect(await probe.answer()).toMatchObject({
      status: 503,
      headers: { connection: 'close' },
      body: { error: 503, message: 'Not ready: shutting down' },
    });
    expect(await inFlight.answer()).toMatchObject({
      status: 200,
      headers: { connection: 'close' },
      body: { name: 'In flight' },
    });
    expect(await exited).toBe(0);
    expect(Date.now() - started).toBeLessThan(SHUTDOWN_TIMEOUT_MS);
    expect(service.output()).toContain('Shutdown complete');
    // The client that never finished was cut, without an answer, so the exit could come in time.
    expect(await stalled.answer()).toMatchObject({ status: undefined, closed: true });
    service = undefined;

    // The send that hung was aborted and went back to pending: the next start sends it again, with
    // the same webhook-id, and the create answered during the drain produced its event too.
    receiver.answerWith(() => 200);
    service = await startService(env());
    await receiver.waitFor(() => receiver.accepted().length === 2);
    expect(receiver.accepted().map((got) => got.webhookId)).toContain(hungWebhookId);
    expect(receiver.accepted().map((got) => JSON.parse(got.body) as unknown)).toEqual(
      expect.arrayContaining([
        { id: 1, name: 'Hung' },
        { id: 2, name: 'In flight' },
      ]),
    );
  });
});
