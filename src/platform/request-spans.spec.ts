import { context, propagation, trace } from '@opentelemetry/api';
import {
  AlwaysOffSampler,
  AlwaysOnSampler,
  BasicTracerProvider,
  InMemorySpanExporter,
  ParentBasedSampler,
  Sampler,
  SimpleSpanProcessor,
} from '@opentelemetry/sdk-trace-base';
import { NodeTracerProvider } from '@opentelemetry/sdk-trace-node';
import Fastify, { FastifyInstance } from 'fastify';
import { traceRequests } from './request-spans';
import { SamplingFirst } from './sampling-first';

describe('traceRequests (the server span of each request)', () => {
  const exporter = new InMemorySpanExporter();
  let app: FastifyInstance;
  // What the handler saw as the active span, per request.
  let activeInHandler: (string | undefined)[];

  // The AsyncLocalStorage context manager and the W3C propagator, as src/tracing.ts registers them.
  beforeAll(() => new NodeTracerProvider().register());
  afterAll(() => {
    context.disable();
    propagation.disable();
  });

  async function appSampling(sampler: Sampler): Promise<void> {
    const sampling = new SamplingFirst(sampler);
    const provider = new BasicTracerProvider({
      sampler,
      idGenerator: sampling,
      spanProcessors: [new SimpleSpanProcessor(exporter)],
    });
    app = Fastify();
    traceRequests(app, provider.getTracer('test'), sampling);
    activeInHandler = [];
    const handler = async () => {
      // After a tick, as Nest's pipeline is: the context must still be there.
      await new Promise((resolve) => setImmediate(resolve));
      activeInHandler.push(trace.getActiveSpan()?.spanContext().spanId);
      return { ok: true };
    };
    app.get('/plants/:id', handler);
    app.post('/plants', handler);
    app.get('/health/live', handler);
    app.get('/fails', async (_request, reply) => reply.code(503).send({ error: 503 }));
    await app.ready();
  }

  afterEach(async () => {
    await app.close();
    exporter.reset();
  });

  describe('when the request is sampled', () => {
    beforeEach(() => appSampling(new ParentBasedSampler({ root: new AlwaysOnSampler() })));

    it("should make one server span, the caller's child, with the route and the status, active in the handler", async () => {
      const traceId = '0af7651916cd43dd8448eb211c80319c';
      const response = await app.inject({
        url: '/plants/7?x=1',
        headers: { traceparent: `00-${traceId}-b7ad6b7169203331-01` },
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
