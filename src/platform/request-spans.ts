import {
  Context,
  context,
  propagation,
  ROOT_CONTEXT,
  Span,
  SpanKind,
  SpanStatusCode,
  trace,
  Tracer,
} from '@opentelemetry/api';
import { FastifyInstance, FastifyReply, FastifyRequest, RouteOptions } from 'fastify';
import { routeTemplateOf } from './route-template';
import { SamplingFirst } from './sampling-first';

const CONTEXT = Symbol('plant-store.trace-context');

interface Traced {
  [CONTEXT]: Context | null;
}

/** Health probes and scrapes are not traced. */
const UNTRACED = /^\/(health|metrics)(\/|$)/;

/**
 * One server span per request, made from Fastify's hooks (loaded only when tracing is on; it
 * replaces the http instrumentation, `@fastify/otel` and the Nest instrumentation, which wrapped
 * every request, sampled or not, and made a span per hook).
 *
 * `onRequest`, the first hook of all (this is added as the instance is made): the caller's
 * `traceparent` is taken with the global propagator and the sampler decides at once, before any span
 * is made (`sampling`, the tracer's own sampler and id generator). An unsampled request stops there:
 * no span, no attribute, no context bound, no child span anywhere (the children look for a sampled
 * parent), no listener. A sampled one gets its attributes, its context bound for the rest
 * of the request (the hooks that follow, and the route's handler, which Nest's whole pipeline runs
 * in), and is ended when its response closes: with the status, whether sent or cut short.
 */
export function traceRequests(fastify: FastifyInstance, tracer: Tracer, sampling: SamplingFirst): void {
  fastify.decorateRequest(CONTEXT, null);

  fastify.addHook('onRequest', (request, reply, done) => {
    const route = routeTemplateOf(request);
    if (route !== undefined && UNTRACED.test(route)) return done();
    const parent =
      request.headers.traceparent === undefined ? ROOT_CONTEXT : propagation.extract(ROOT_CONTEXT, request.headers);
    const name = route === undefined ? request.method : `${request.method} ${route}`;
    const span = sampling.startSpan(tracer, name, SpanKind.SERVER, parent);
    if (span === undefined) return done();
    recordRequest(request, reply, span, route);
    const active = trace.setSpan(parent, span);
    (request as FastifyRequest & Traced)[CONTEXT] = active;
    context.with(active, done);
  });

  // A body is read from the socket's events, outside the context bound above: the handler is put
  // back in it (a request without a body is still in it). Added before any route, so it wraps them
  // all; one property read for the others.
  fastify.addHook('onRoute', (route: RouteOptions) => {
    const handler = route.handler;
    route.handler = function inRequestContext(this: FastifyInstance, request: FastifyRequest, reply: FastifyReply) {
      const active = (request as FastifyRequest & Traced)[CONTEXT];
      return active === null || context.active() === active
        ? handler.call(this, request, reply)
        : context.with(active, handler, this, request, reply);
    };
  });
}

/** The attributes of a sampled request's span, and its end when the response closes. */
function recordRequest(request: FastifyRequest, reply: FastifyReply, span: Span, route: string | undefined): void {
  const query = request.url.indexOf('?');
  span.setAttributes({
    'http.request.method': request.method,
    'url.path': query === -1 ? request.url : request.url.slice(0, query),
    'url.scheme': request.protocol,
    'client.address': request.ip,
    ...(route === undefined ? {} : { 'http.route': route }),
  });
  reply.raw.once('close', () => {
    const status = reply.raw.statusCode;
    span.setAttribute('http.response.status_code', status);
    if (!reply.raw.writableEnded) {
      // The connection closed before the response was sent.
      span.setAttribute('error.type', 'aborted');
      span.setStatus({ code: SpanStatusCode.ERROR });
    } else if (status >= 500) {
      span.setAttribute('error.type', String(status));
      span.setStatus({ code: SpanStatusCode.ERROR });
    }
    span.end();
  });
}
