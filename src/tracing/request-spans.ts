import {
  Context,
  context,
  isSpanContextValid,
  propagation,
  ROOT_CONTEXT,
  Span,
  SpanContext,
  SpanKind,
  SpanStatusCode,
  trace,
  Tracer,
} from '@opentelemetry/api';
import { FastifyInstance, FastifyReply, FastifyRequest, RouteOptions } from 'fastify';
import { performance } from 'node:perf_hooks';
import { CallerPending } from './caller-pending';
import { routeTemplateOf } from '../http/route-template';
import { SamplingFirst } from './sampling-first';
import { onCallerTrusted } from './trace-context';

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
 * `onRequest`, the first hook of all (this is added as the instance is made). A request without a
 * caller's trace context (no valid `traceparent`) is a root: the sampler decides at once, before any
 * span is made (`sampling`, the tracer's own sampler and id generator). An unsampled request stops
 * there: no span, no attribute, no context bound, no child span anywhere (the children look for a
 * sampled parent), no listener. A sampled one gets its attributes, its context bound for the rest
 * of the request (the hooks that follow, and the route's handler, which Nest's whole pipeline runs
 * in), and is ended when its response closes: with the status, whether sent or cut short.
 *
 * A caller's trace context is trusted only once its credential has passed: a stranger must neither
 * add its spans to a trace of its choosing nor have them sampled by asking. So a request with one is
 * decided later (`CallerPending`): continued when `BearerAuthGuard` trusts it, otherwise a new root
 * by the service's own ratio once it has been answered.
 */
export function traceRequests(fastify: FastifyInstance, tracer: Tracer, sampling: SamplingFirst): void {
  fastify.decorateRequest(CONTEXT, null);
  onCallerTrusted((request) => {
    const active = (request as Partial<Traced>)[CONTEXT];
    if (active instanceof CallerPending) active.trust();
  });

  fastify.addHook('onRequest', (request, reply, done) => {
    const route = routeTemplateOf(request);
    if (route !== undefined && UNTRACED.test(route)) return done();
    const name = route === undefined ? request.method : `${request.method} ${route}`;
    const caller = request.headers.traceparent === undefined ? undefined : callerOf(request);
    let active: Context;
    if (caller === undefined) {
      const span = sampling.startSpan(tracer, name, SpanKind.SERVER, ROOT_CONTEXT);
      if (span === undefined) return done();
      describeRequest(request, span, route);
      reply.raw.once('close', () => endRequest(reply, span));
      active = trace.setSpan(ROOT_CONTEXT, span);
    } else {
      const pending = new CallerPending(caller, (parent, startTime) => {
        const span = sampling.startSpan(tracer, name, SpanKind.SERVER, parent, startTime);
        if (span !== undefined) describeRequest(request, span, route);
        return span;
      });
      reply.raw.once('close', () => {
        const span = pending.close();
        // Its start was given, so its end is too (the SDK would otherwise take Date.now(), in ms).
        if (span !== undefined) endRequest(reply, span, performance.now());
      });
      active = pending;
    }
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

/**
 * The caller's span context from its `traceparent`, with nothing else: its `tracestate` is left
 * behind, so that it never reaches anyone the service sends a request to; undefined when not valid.
 */
function callerOf(request: FastifyRequest): SpanContext | undefined {
  const sent = trace.getSpanContext(propagation.extract(ROOT_CONTEXT, request.headers));
  if (sent === undefined || !isSpanContextValid(sent)) return undefined;
  return { traceId: sent.traceId, spanId: sent.spanId, traceFlags: sent.traceFlags, isRemote: true };
}

/** The attributes of a sampled request's span. */
function describeRequest(request: FastifyRequest, span: Span, route: string | undefined): void {
  const query = request.url.indexOf('?');
  span.setAttributes({
    'http.request.method': request.method,
    'url.path': query === -1 ? request.url : request.url.slice(0, query),
    'url.scheme': request.protocol,
    'client.address': request.ip,
    ...(route === undefined ? {} : { 'http.route': route }),
  });
}

/** Ends a sampled request's span, its response closed: with the status, whether sent or cut short. */
function endRequest(reply: FastifyReply, span: Span, endTime?: number): void {
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
  span.end(endTime);
}
