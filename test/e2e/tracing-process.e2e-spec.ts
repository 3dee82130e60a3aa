import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { request } from '../support/http';
import { OtlpReceiver } from '../support/otlp-receiver';
import { createTestSchema, describeOnEachStore, TestSchema } from '../support/postgres';
import { ServiceProcess, startService } from '../support/service-process';
import { LOOPBACK_NETWORKS, makeSecret, WebhookReceiver } from '../support/webhook-receiver';

const TOKEN = 'tracing-process-token';

describeOnEachStore('one trace from the request to the webhook delivery (e2e on %s, node dist/main.js)', (postgres) => {
  const secret = makeSecret();
  let collector: OtlpReceiver;
  let receiver: WebhookReceiver;
  let service: ServiceProcess | undefined;
  let dir: string;
  let schema: TestSchema | undefined;

  beforeEach(async () => {
    collector = new OtlpReceiver();
    await collector.start();
    receiver = new WebhookReceiver([secret]);
    await receiver.start();
    dir = mkdtempSync(join(tmpdir(), 'plant-store-tracing-'));
    schema = postgres ? await createTestSchema() : undefined;
  });
  afterEach(async () => {
    await service?.stop('SIGKILL');
    service = undefined;
    await receiver.stop();
    await collector.stop();
    await schema?.drop();
    rmSync(dir, { recursive: true, force: true });
  });

  it("should keep the caller's trace through the create, its database work and the delivery, and flush on SIGTERM", async () => {
    service = await startService({
      DATABASE_URL: schema ? schema.url : `sqlite:${join(dir, 'plants.db')}`,
      DATA_DIR: dir,
      AUTH_TOKENS: TOKEN,
      WEBHOOK_URLS: receiver.url,
      WEBHOOK_SECRET: secret,
      WEBHOOK_ALLOWED_NETWORKS: LOOPBACK_NETWORKS,
      WEBHOOK_POLL_INTERVAL_MS: '100',
      OTEL_EXPORTER_OTLP_ENDPOINT: collector.endpoint,
      OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
      OTEL_SERVICE_NAME: 'plant-store-under-test',
    });
    const traceId = randomBytes(16).toString('hex');
    const callerSpan = randomBytes(8).toString('hex');
    const created = await request(`${service.url}/plants`, {
      body: '{"id":9007199254740993,"name":"Traced"}',
      auth: `Bearer ${TOKEN}`,
      headers: { traceparent: `00-${traceId}-${callerSpan}-01` },
    });
    expect(created.status).toBe(200);
    await receiver.waitFor(() => receiver.accepted().length === 1);
    // The receiver's request carries a traceparent of the caller's trace.
    expect(receiver.received[0].traceparent).toMatch(new RegExp(`^00-${traceId}-[0-9a-f]{16}-01$`));
    // Logs carry the trace while a span is active.
    expect(service.logs().some((line) => line.trace_id === traceId && typeof line.span_id === 'string')).toBe(true);

    // Spans leave in batches; SIGTERM flushes what is left before the exit.
    expect(await service.stop('SIGTERM')).toBe(0);
    service = undefined;
    const inTrace = collector.spans.filter((span) => span.traceId === traceId);
    const names = inTrace.map((span) => span.name);
    expect(inTrace.every((span) => span.serviceName === 'plant-store-under-test')).toBe(true);
    // The server span is the caller's child.
    const server = inTrace.find((span) => span.kind === 2 && span.parentSpanId === callerSpan);
    expect(server).toBeDefined();
    // The database work of the create: pg's span of its one statement (`WITH inserted AS (INSERT …`,
    // the outbox's CTEs after it), or ours for SQLite (it has no instrumentation).
    const database = postgres ? /^pg\.query:WITH\b/ : /^sqlite group commit$/;
    expect(names.some((name) => database.test(name))).toBe(true);
    // The delivery, and the webhook's HTTP request inside it.
    const delivery = inTrace.find((span) => span.name === 'webhook deliver');
    expect(delivery).toMatchObject({ attributes: { 'messaging.message.id': receiver.received[0].webhookId } });
    expect(inTrace.some((span) => span.kind === 3 && span.parentSpanId === delivery!.spanId)).toBe(true);
    expect(names.length).toBeGreaterThan(3);
  });
});
