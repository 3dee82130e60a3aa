import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { request } from '../support/http';
import { OtlpReceiver } from '../support/otlp-receiver';
import { createTestSchema, describeOnEachStore, TestSchema } from '../support/postgres';
import { PrivateRedis } from '../support/redis-server';
import { ServiceProcess, startService } from '../support/service-process';

const TOKEN = 'tracing-strangers-token';
const ADMIN_TOKEN = 'tracing-strangers-admin-token';

// A caller is a stranger until its credential passes: a request that fails authentication never
// continues the trace it sent, nor is sampled because it asked (CONTRACT.md, "Tracing").
describeOnEachStore("a stranger's trace context (e2e on %s, node dist/main.js)", (postgres) => {
  let redis: PrivateRedis;
  let collector: OtlpReceiver;
  let service: ServiceProcess | undefined;
  let dir: string;
  let schema: TestSchema | undefined;

  beforeEach(async () => {
    // Its own, so that each test's failures are counted from none.
    redis = new PrivateRedis();
    await redis.start();
    collector = new OtlpReceiver();
    await collector.start();
    dir = mkdtempSync(join(tmpdir(), 'plant-store-strangers-'));
    schema = postgres ? await createTestSchema() : undefined;
  });
  afterEach(async () => {
    await service?.stop('SIGKILL');
    service = undefined;
    await collector.stop();
    await redis.stop();
    await schema?.drop();
    rmSync(dir, { recursive: true, force: true });
  });

  /** The service, sampling new roots at `ratio` and following a caller's decision (parent-based). */
  async function start(ratio: string): Promise<ServiceProcess> {
    service = await startService({
      DATABASE_URL: schema ? schema.url : `sqlite:${join(dir, 'plants.db')}`,
      DATA_DIR: dir,
      AUTH_TOKENS: TOKEN,
      ADMIN_TOKENS: ADMIN_TOKEN,
      // The third failure from this address is a 429, before any authentication.
      AUTH_FAILURES_PER_MINUTE: '2',
      // The failures are counted in Redis: pg's and ioredis's spans are made under an active span.
      REDIS_URL: redis.url,
      OTEL_EXPORTER_OTLP_ENDPOINT: collector.endpoint,
      OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
      OTEL_TRACES_SAMPLER: 'parentbased_traceidratio',
      OTEL_TRACES_SAMPLER_ARG: ratio,
    });
    return service;
  }

  /** A `traceparent` of a trace of its own, sampled by its caller. */
  const sampledTrace = () => {
    const traceId = randomBytes(16).toString('hex');
    const spanId = randomBytes(8).toString('hex');
    return { traceId, spanId, traceparent: `00-${traceId}-${spanId}-01` };
  };

  /**
   * A stranger's requests, each in a trace of its own that it samples: a 401 without a token, a 401
   * with a wrong one and a body, a 403 (a valid token without the admin permission), then a 429 (the
   * third failure). Resolves with their trace ids.
   */
  async function strangers(url: string): Promise<string[]> {
    const sent = [
      { status: 401, path: '/plants', method: 'GET', auth: false as const },
      { status: 401, path: '/plants', method: 'POST', auth: 'Bearer not-a-token', body: '{"id":2,"name":"Stranger"}' },
      { status: 403, path: '/webhooks/endpoints', method: 'GET', auth: `Bearer ${TOKEN}` },
      { status: 429, path: '/plants/1', method: 'GET', auth: 'Bearer not-a-token' },
    ];
    const traceIds = [];
    for (const { status, path, ...options } of sent) {
      const { traceId, traceparent } = sampledTrace();
      const answer = await request(`${url}${path}`, { ...options, headers: { traceparent } });
      expect(answer.status).toBe(status);
      traceIds.push(traceId);
    }
    return traceIds;
  }

  it("should export nothing of a stranger's sampled trace when the service samples no root, and keep a trusted caller's whole", async () => {
    const { url } = await start('0');
    expect((await request(`${url}/plants`, { body: '{"id":1,"name":"Known"}', auth: `Bearer ${TOKEN}` })).status).toBe(
      200,
    );
    const stranger = await strangers(url);
    // A trusted caller's read, with no body: its credential is checked by the guard, after the request
    // began; its trace is continued all the same, down to the database.
    const caller = sampledTrace();
    const read = await request(`${url}/plants/1`, {
      method: 'GET',
      auth: `Bearer ${TOKEN}`,
      headers: { traceparent: caller.traceparent },
    });
    expect(read.status).toBe(200);

    expect(await service!.stop('SIGTERM')).toBe(0);
    const logs = service!.logs();
    service = undefined;
    // Only the trusted caller's trace: the service samples no root of its own.
    expect(new Set(collector.spans.map((span) => span.traceId))).toEqual(new Set([caller.traceId]));
    const server = collector.spans.find((span) => span.kind === 2);
    expect(server).toMatchObject({ name: 'GET /plants/:id', parentSpanId: caller.spanId });
    const database = postgres ? /^pg\.query:SELECT/ : /^sqlite read a plant$/;
    expect(collector.spans.some((span) => database.test(span.name) && span.parentSpanId === server!.spanId)).toBe(true);
    // Nor is a stranger's trace id written in the log.
    expect(logs.filter((line) => stranger.includes(String(line.trace_id)))).toEqual([]);
  });

  it("should sample a stranger's requests by the service's own ratio, each as a new root", async () => {
    const { url } = await start('1');
    const stranger = await strangers(url);

    expect(await service!.stop('SIGTERM')).toBe(0);
    service = undefined;
    expect(collector.spans.filter((span) => stranger.includes(span.traceId))).toEqual([]);
    const servers = collector.spans.filter((span) => span.kind === 2);
    expect(servers.map((span) => [span.name, span.attributes['http.response.status_code']])).toEqual([
      ['GET /plants', 401],
      ['POST /plants', 401],
      ['GET /webhooks/endpoints', 403],
      ['GET /plants/:id', 429],
    ]);
    expect(servers.every((span) => span.parentSpanId === undefined)).toBe(true);
    expect(new Set(servers.map((span) => span.traceId)).size).toBe(4);
  });
});
