import { context, propagation, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import {
  AlwaysOffSampler,
  AlwaysOnSampler,
  InMemorySpanExporter,
  ParentBasedSampler,
  Sampler,
  SimpleSpanProcessor,
  TracerProvider,
} from '@opentelemetry/sdk-trace';
import Fastify, { FastifyInstance } from 'fastify';
import { performance } from 'node:perf_hooks';
import { traceRequests } from './request-spans';
import { SamplingFirst } from './sampling-first';
import { callerTrusted } from './trace-context';

describe('traceRequests (the server span of each request)', () => {
  const exporter = new InMemorySpanExporter();
  let app: FastifyInstance;
  // What the handler saw as the active span, per request.
  let activeInHandler: (string | undefined)[];
  // The clock `performance.now()` reads where a test stands it in.
  let clock = 0;

  // The AsyncLocalStorage context manager and the W3C propagator, as src/tracing/tracing.ts registers them.
  beforeAll(() => {
    context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
    propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  });
  afterAll(() => {
    context.disable();
    propagation.disable();
  });

  async function appSampling(sampler: Sampler): Promise<void> {
    const sampling = new SamplingFirst(sampler);
    const provider = new TracerProvider({
      sampler,
      idGenerator: sampling,
      spanProcessors: [new SimpleSpanProcessor({ exporter })],
    });
    app = Fastify();
    traceRequests(app, provider.getTracer('test'), sampling);
    activeInHandler = [];
    // As Nest's pipeline is: the guard, inside the route's handler, trusts the caller (after a tick,
    // as a JWT's check is), then the handler runs, in the context bound before the guard.
    const handler = async (request: object) => {
      await new Promise((resolve) => setImmediate(resolve));
      callerTrusted(request);
      await new Promise((resolve) => setImmediate(resolve));
      activeInHandler.push(trace.getActiveSpan()?.spanContext().spanId);
      return { ok: true };
    };
    app.get('/plants/:id', handler);
    app.post('/plants', handler);
    app.get('/health/live', handler);
    app.get('/fails', async (_request, reply) => reply.code(503).send({ error: 503 }));
    // A guard that refuses: the handler never runs.
    app.get('/refused', async (_request, reply) => {
      await new Promise((resolve) => setImmediate(resolve));
      activeInHandler.push(trace.getActiveSpan()?.spanContext().spanId);
      return reply.code(401).send({ error: 401 });
    });
    // A guard that trusts the caller late (4 s on the test's clock): its span starts at the request's
    // arrival all the same.
    app.get('/slow', async (request) => {
      await new Promise((resolve) => setImmediate(resolve));
      clock += 4_000;
      callerTrusted(request);
      return { ok: true };
    });
    await app.ready();
  }

  afterEach(async () => {
    jest.restoreAllMocks();
    await app.close();
    exporter.reset();
  });

  describe('when the request is sampled', () => {
    beforeEach(() => appSampling(new ParentBasedSampler({ root: new AlwaysOnSampler() })));

    it("should make one server span, the caller's child, with the route and the status, active in the handler", async () => {
      const traceId = '0af7651916cd43dd8448eb211c80319c';
      const response = await app.inject({
        url: '/plants/7?x=1',
        headers: { traceparent: `00-${traceId}-b7ad6b7169203331-01`, tracestate: 'evil=injected-by-client' },
      });
      expect(response.statusCode).toBe(200);
      const spans = exporter.getFinishedSpans();
      expect(spans).toHaveLength(1);
      const [span] = spans;
      expect(span.name).toBe('GET /plants/:id');
      expect(span.kind).toBe(1); // SpanKind.SERVER
      expect(span.spanContext().traceId).toBe(traceId);
      expect(span.parentSpanContext?.spanId).toBe('b7ad6b7169203331');
      expect(span.attributes).toEqual({
        'http.request.method': 'GET',
        'http.route': '/plants/:id',
        'url.path': '/plants/7',
        'url.scheme': 'http',
        'client.address': '127.0.0.1',
        'http.response.status_code': 200,
      });
      expect(activeInHandler).toEqual([span.spanContext().spanId]);
      // The caller's tracestate is not the service's to pass on.
      expect(span.spanContext().traceState).toBeUndefined();
    });

    it("should start a trusted caller's span at the request's arrival, not when it is trusted", async () => {
      const traceId = '0af7651916cd43dd8448eb211c80319c';
      clock = 1_000;
      jest.spyOn(performance, 'now').mockImplementation(() => clock);
      await app.inject({ url: '/slow', headers: { traceparent: `00-${traceId}-b7ad6b7169203331-01` } });
      const [span] = exporter.getFinishedSpans();
      expect(span.spanContext().traceId).toBe(traceId);
      // Trusted 4 s after the request came (the clock stood still otherwise): a span started then would last 0.
      expect(span.duration).toEqual([4, 0]);
    });

    it("should not continue a stranger's trace: its span is a new root, and none is active before", async () => {
      const traceId = '0af7651916cd43dd8448eb211c80319c';
      const response = await app.inject({
        url: '/refused',
        headers: { traceparent: `00-${traceId}-b7ad6b7169203331-01` },
      });
      expect(response.statusCode).toBe(401);
      const [span] = exporter.getFinishedSpans();
      expect(span.name).toBe('GET /refused');
      expect(span.spanContext().traceId).not.toBe(traceId);
      expect(span.parentSpanContext).toBeUndefined();
      expect(span.attributes['http.response.status_code']).toBe(401);
      expect(activeInHandler).toEqual([undefined]);
    });

    it('should keep the context across a body read from the socket', async () => {
      const response = await app.inject({ method: 'POST', url: '/plants', payload: { id: 1 } });
      expect(response.statusCode).toBe(200);
      const [span] = exporter.getFinishedSpans();
      expect(span.name).toBe('POST /plants');
      expect(activeInHandler).toEqual([span.spanContext().spanId]);
    });

    it('should mark a 5xx as an error', async () => {
      await app.inject({ url: '/fails' });
      const [span] = exporter.getFinishedSpans();
      expect(span.status.code).toBe(2); // SpanStatusCode.ERROR
      expect(span.attributes['http.response.status_code']).toBe(503);
    });

    it('should name an unmatched request by its method alone', async () => {
      await app.inject({ url: '/nowhere' });
      const [span] = exporter.getFinishedSpans();
      expect(span.name).toBe('GET');
      expect(span.attributes['http.route']).toBeUndefined();
      expect(span.attributes['http.response.status_code']).toBe(404);
    });

    it('should not trace health probes', async () => {
      await app.inject({ url: '/health/live' });
      expect(exporter.getFinishedSpans()).toEqual([]);
      expect(activeInHandler).toEqual([undefined]);
    });
  });

  describe('when the request is not sampled', () => {
    beforeEach(() => appSampling(new ParentBasedSampler({ root: new AlwaysOffSampler() })));

    it('should make no span and bind no context', async () => {
      const response = await app.inject({ url: '/plants/7' });
      expect(response.statusCode).toBe(200);
      expect(exporter.getFinishedSpans()).toEqual([]);
      expect(activeInHandler).toEqual([undefined]);
    });

    it('should make no span for a stranger, though its caller sampled', async () => {
      const response = await app.inject({
        url: '/refused',
        headers: { traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01' },
      });
      expect(response.statusCode).toBe(401);
      expect(exporter.getFinishedSpans()).toEqual([]);
      expect(activeInHandler).toEqual([undefined]);
    });

    it('should continue the trace of a trusted caller that sampled it, as it asked', async () => {
      const traceId = '0af7651916cd43dd8448eb211c80319c';
      await app.inject({ url: '/plants/7', headers: { traceparent: `00-${traceId}-b7ad6b7169203331-01` } });
      const [span] = exporter.getFinishedSpans();
      expect(span.spanContext().traceId).toBe(traceId);
      expect(activeInHandler).toEqual([span.spanContext().spanId]);
    });

    it('should make no span for a caller that did not sample either', async () => {
      await app.inject({
        url: '/plants/7',
        headers: { traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00' },
      });
      expect(exporter.getFinishedSpans()).toEqual([]);
      expect(activeInHandler).toEqual([undefined]);
    });
  });
});
