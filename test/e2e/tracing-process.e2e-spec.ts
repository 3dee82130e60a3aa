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
const METRICS_TOKEN = 'tracing-process-metrics-token';
const ADMIN = 'tracing-process-admin-token';

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
      // The caller's vendor data, which is not the service's to pass on.
      headers: { traceparent: `00-${traceId}-${callerSpan}-01`, tracestate: 'evil=injected-by-client', baggage: 'k=v' },
    });
    expect(created.status).toBe(200);
    await receiver.waitFor(() => receiver.accepted().length === 1);
    // The receiver's request carries a traceparent of the caller's trace, and nothing of the caller's.
    expect(receiver.received[0].traceparent).toMatch(new RegExp(`^00-${traceId}-[0-9a-f]{16}-01$`));
    expect(receiver.received[0].tracestate).toBeUndefined();
    expect(receiver.received[0].baggage).toBeUndefined();

    // Spans leave in batches, log lines within 250 ms; SIGTERM flushes what is left of both before the exit.
    expect(await service.stop('SIGTERM')).toBe(0);
    // Logs carry the trace while a span is active.
    expect(service.logs().some((line) => line.trace_id === traceId && typeof line.span_id === 'string')).toBe(true);
    service = undefined;
    const inTrace = collector.spans.filter((span) => span.traceId === traceId);
    const names = inTrace.map((span) => span.name);
    expect(inTrace.every((span) => span.serviceName === 'plant-store-under-test')).toBe(true);
    // The server span is the caller's child.
    const server = inTrace.find((span) => span.kind === 2 && span.parentSpanId === callerSpan);
    expect(server).toBeDefined();
    // The database work of the create: pg's span of its batch insert (then the outbox's statement), or
    // ours for SQLite's transaction (it has no instrumentation).
    const database = postgres ? /^pg\.query:INSERT\b/ : /^sqlite group commit$/;
    expect(names.some((name) => database.test(name))).toBe(true);
    // The delivery, and the webhook's HTTP request inside it.
    const delivery = inTrace.find((span) => span.name === 'webhook deliver');
    expect(delivery).toMatchObject({ attributes: { 'messaging.message.id': receiver.received[0].webhookId } });
    expect(inTrace.some((span) => span.kind === 3 && span.parentSpanId === delivery!.spanId)).toBe(true);
    // The receiver's traceparent names that request's span: the service's own.
    const sentBy = inTrace.find((span) => span.spanId === receiver.received[0].traceparent!.split('-')[2]);
    expect(sentBy).toMatchObject({ kind: 3, parentSpanId: delivery!.spanId });
    expect(names.length).toBeGreaterThan(3);
  });

  it("should keep the caller's trace through a delete to its plant.deleted delivery", async () => {
    service = await startService({
      DATABASE_URL: schema ? schema.url : `sqlite:${join(dir, 'plants.db')}`,
      DATA_DIR: dir,
      AUTH_TOKENS: TOKEN,
      ADMIN_TOKENS: ADMIN,
      WEBHOOK_ALLOWED_NETWORKS: LOOPBACK_NETWORKS,
      WEBHOOK_POLL_INTERVAL_MS: '100',
      OTEL_EXPORTER_OTLP_ENDPOINT: collector.endpoint,
      OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
      OTEL_SERVICE_NAME: 'plant-store-under-test',
    });
    const added = await request(`${service.url}/webhooks/endpoints`, {
      body: { url: receiver.url, eventTypes: ['plant.deleted'] },
      auth: `Bearer ${ADMIN}`,
    });
    expect(added.status).toBe(201);
    receiver.trust((added.body as { secret: string }).secret);
    const plant = { body: '{"id":-9223372036854775808,"name":"Traced"}', auth: `Bearer ${TOKEN}` };
    expect((await request(`${service.url}/plants`, plant)).status).toBe(200);
    const traceId = randomBytes(16).toString('hex');
    const deleted = await request(`${service.url}/plants/-9223372036854775808`, {
      method: 'DELETE',
      auth: `Bearer ${TOKEN}`,
      headers: { traceparent: `00-${traceId}-${randomBytes(8).toString('hex')}-01` },
    });
    expect(deleted.status).toBe(204);
    await receiver.waitFor(() => receiver.accepted().length === 1);
    expect(receiver.received[0].traceparent).toMatch(new RegExp(`^00-${traceId}-[0-9a-f]{16}-01$`));

    expect(await service.stop('SIGTERM')).toBe(0);
    service = undefined;
    const delivery = collector.spans.find((span) => span.traceId === traceId && span.name === 'webhook deliver');
    expect(delivery).toMatchObject({ attributes: { 'messaging.message.id': receiver.received[0].webhookId } });
  });

  it('should export the server span of every sampled request, none of an unsampled one or a probe, and say so at SIGTERM', async () => {
    service = await startService({
      DATABASE_URL: schema ? schema.url : `sqlite:${join(dir, 'plants.db')}`,
      DATA_DIR: dir,
      AUTH_TOKENS: TOKEN,
      METRICS_TOKENS: METRICS_TOKEN,
      OTEL_EXPORTER_OTLP_ENDPOINT: collector.endpoint,
      OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
    });
    const auth = `Bearer ${TOKEN}`;
    expect((await request(`${service.url}/plants`, { body: '{"id":1,"name":"Read"}', auth })).status).toBe(200);
    const reads = 300;
    for (let sent = 0; sent < reads; sent += 30) {
      const answers = await Promise.all(
        Array.from({ length: 30 }, () => request(`${service!.url}/plants/1`, { method: 'GET', auth })),
      );
      expect(answers.map((answer) => answer.status)).toEqual(Array(30).fill(200));
    }
    // A caller that did not sample its trace: no span (parent-based sampling, the default).
    const unsampled = randomBytes(16).toString('hex');
    const notSampled = await request(`${service.url}/plants/1`, {
      method: 'GET',
      auth,
      headers: { traceparent: `00-${unsampled}-${randomBytes(8).toString('hex')}-00` },
    });
    expect(notSampled.status).toBe(200);
    expect((await request(`${service.url}/health/ready`, { method: 'GET', auth: false })).status).toBe(200);
    // The scrape says so too, while it runs.
    const scraped = await request(`${service.url}/metrics`, { method: 'GET', auth: `Bearer ${METRICS_TOKEN}` });
    expect(scraped.text).toContain('plant_store_trace_spans_total{outcome="dropped"} 0');

    expect(await service.stop('SIGTERM')).toBe(0);
    const logs = service.logs();
    service = undefined;
    const servers = collector.spans.filter((span) => span.kind === 2);
    expect(servers.filter((span) => span.name === 'GET /plants/:id')).toHaveLength(reads);
    expect(servers.filter((span) => span.name === 'POST /plants')).toHaveLength(1);
    expect(servers.filter((span) => String(span.attributes['http.route']).startsWith('/health'))).toEqual([]);
    expect(collector.spans.filter((span) => span.traceId === unsampled)).toEqual([]);
    // Each read's database span is its server span's child.
    const serverIds = new Set(servers.map((span) => span.spanId));
    const database = postgres ? /^pg\.query:SELECT/ : /^sqlite read a plant$/;
    const readSpans = collector.spans.filter(
      (span) => database.test(span.name) && serverIds.has(span.parentSpanId ?? ''),
    );
    expect(readSpans.length).toBeGreaterThanOrEqual(reads);
    const tally = logs.find((line) => String(line.msg).startsWith('Traces: '));
    expect(tally?.msg).toBe(
      `Traces: ${collector.spans.length} spans exported, 0 dropped (span queue full), 0 not accepted by the collector`,
    );
  });
});
