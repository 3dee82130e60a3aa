'use strict';
// A PROTOTYPE FOR MEASUREMENT, not the service's code (bench/README.md, "eighth pass"): how far tracing's
// cost falls when the OpenTelemetry SDK's span objects, batch processor and OTLP serialiser are replaced.
//
// - LeanProvider: an API-compatible tracer provider (the instrumentations and our own spans use it as they
//   use the SDK's) whose spans are small objects, encoded to OTLP protobuf the moment they end.
// - EncodeAtEnd: a span processor for the SDK's own spans that encodes each at its end instead of queueing
//   the span objects for a batch.
// Both send batches of encoded spans with node:http to OTEL_EXPORTER_OTLP_ENDPOINT + /v1/traces.
//
// Left out on purpose, as a prototype: attribute and event limits, links, dropped counts, retries, headers,
// compression, timeouts, https, an endpoint path other than /v1/traces, the JSON and console exporters,
// explicit end and event times (the span's own clock is used), duplicate attribute keys (a repeated key
// is sent twice); negative integers and integers from 2^53 are sent as doubles, bytes as a string.
// Checked by bench/tracing.js's sink decoding every span (kind and route) and counting them, and by a
// review that compared EncodeAtEnd's bytes with the SDK's ProtobufTraceSerializer for the same spans.
// Built into copies of dist/ by ./variants.js.
const api = require('@opentelemetry/api');
const { isTracingSuppressed } = require('@opentelemetry/core');
const http = require('node:http');
const { performance } = require('node:perf_hooks');

class Writer {
  constructor(size = 4096) {
    this.buf = new Uint8Array(size);
    this.pos = 0;
  }
  ensure(n) {
    if (this.pos + n <= this.buf.length) return;
    let s = this.buf.length * 2;
    while (s < this.pos + n) s *= 2;
    const b = new Uint8Array(s);
    b.set(this.buf.subarray(0, this.pos));
    this.buf = b;
  }
  varint(v) {
    this.ensure(10);
    const b = this.buf;
    while (v > 127) {
      b[this.pos++] = (v & 127) | 128;
      v = v > 0x7fffffff ? Math.floor(v / 128) : v >>> 7;
    }
    b[this.pos++] = v;
  }
  tag(f, w) {
    this.varint((f << 3) | w);
  }
  start() {
    this.ensure(1);
    return this.pos++;
  }
  finish(at) {
    const len = this.pos - at - 1;
    if (len < 128) {
      this.buf[at] = len;
      return;
    }
    const extra = len < 16384 ? 1 : len < 2097152 ? 2 : len < 268435456 ? 3 : 4;
    this.ensure(extra);
    this.buf.copyWithin(at + 1 + extra, at + 1, this.pos);
    this.pos += extra;
    let v = len,
      p = at;
    while (v > 127) {
      this.buf[p++] = (v & 127) | 128;
      v >>>= 7;
    }
    this.buf[p] = v;
  }
  string(s) {
    const n = s.length;
    this.ensure(n * 3 + 5);
    const at = this.start();
    const b = this.buf;
    let p = this.pos,
      i = 0;
    for (; i < n; i++) {
      const c = s.charCodeAt(i);
      if (c > 127) break;
      b[p++] = c;
    }
    if (i < n) {
      this.pos = at + 1;
      const bytes = Buffer.from(s, 'utf8');
      this.ensure(bytes.length + 5);
      this.buf.set(bytes, this.pos);
      this.pos += bytes.length;
    } else this.pos = p;
    this.finish(at);
  }
  hex(h) {
    const n = h.length >> 1;
    this.varint(n);
    this.ensure(n);
    const b = this.buf;
    for (let i = 0; i < h.length; i += 2) b[this.pos++] = (nib(h.charCodeAt(i)) << 4) | nib(h.charCodeAt(i + 1));
  }
  fixed64ms(ms) {
    // epoch milliseconds (double) as fixed64 nanoseconds
    const seconds = Math.floor(ms / 1000);
    this.fixed64(seconds, Math.round((ms - seconds * 1000) * 1e6));
  }
  fixed64hr(t) {
    // an HrTime, [seconds, nanos], as fixed64 nanoseconds
    this.fixed64(t[0], t[1]);
  }
  fixed64(seconds, nanos) {
    // seconds * 1e9 + nanos, in two 32-bit halves (the SDK's writeHrTimeAsFixed64: exact beyond 2^53)
    const lo16 = seconds & 0xffff,
      hi = (seconds / 0x10000) >>> 0;
    const a = lo16 * 1e9,
      c = hi * 1e9;
    const aLo = a >>> 0,
      aHi = Math.floor(a / 0x100000000);
    const cLo = ((c & 0xffff) * 0x10000) >>> 0,
      cHi = (c / 0x10000) >>> 0;
    const low = aLo + cLo + nanos;
    const carry = Math.floor(low / 0x100000000);
    this.u32(low >>> 0);
    this.u32((aHi + cHi + carry) >>> 0);
  }
  u32(v) {
    this.ensure(4);
    const b = this.buf;
    b[this.pos++] = v & 255;
    b[this.pos++] = (v >>> 8) & 255;
    b[this.pos++] = (v >>> 16) & 255;
    b[this.pos++] = (v >>> 24) & 255;
  }
  anyValue(v) {
    const at = this.start();
    if (typeof v === 'string') {
      this.tag(1, 2);
      this.string(v);
    } else if (typeof v === 'boolean') {
      this.tag(2, 0);
      this.varint(v ? 1 : 0);
    } else if (typeof v === 'number' && Number.isSafeInteger(v) && v >= 0) {
      this.tag(3, 0);
      this.varint(v);
    } else if (typeof v === 'number') {
      this.tag(4, 1);
      this.ensure(8);
      new DataView(this.buf.buffer).setFloat64(this.pos, v, true);
      this.pos += 8;
    } else if (Array.isArray(v)) {
      this.tag(5, 2);
      const a = this.start();
      for (const item of v) {
        this.tag(1, 2);
        this.anyValue(item);
      }
      this.finish(a);
    } else {
      this.tag(1, 2);
      this.string(String(v));
    }
    this.finish(at);
  }
  keyValue(field, k, v) {
    this.tag(field, 2);
    const at = this.start();
    this.tag(1, 2);
    this.string(k);
    this.tag(2, 2);
    this.anyValue(v);
    this.finish(at);
  }
}
function nib(c) {
  return c <= 57 ? c - 48 : (c | 32) - 87;
}

const INVALID = api.INVALID_SPAN_CONTEXT;
class LeanSpan {
  constructor(processor, scope, ctx, parent, name, kind, start, attributes) {
    this.processor = processor;
    this.scope = scope;
    this.ctx = ctx;
    this.parent = parent;
    this.name = name;
    this.kind = kind;
    this.start = start;
    this.endTime = 0;
    this.attrs = [];
    this.code = 0;
    this.message = undefined;
    this.events = undefined;
    if (attributes !== undefined) this.setAttributes(attributes);
  }
  spanContext() {
    return this.ctx;
  }
  setAttribute(k, v) {
    if (v !== undefined && v !== null && this.endTime === 0) this.attrs.push(k, v);
    return this;
  }
  setAttributes(o) {
    for (const k in o) this.setAttribute(k, o[k]);
    return this;
  }
  addEvent(name, attributes) {
    if (this.endTime !== 0) return this;
    (this.events ??= []).push({
      name,
      time: now(),
      attributes:
        typeof attributes === 'object' && !Array.isArray(attributes) && !(attributes instanceof Date)
          ? attributes
          : undefined,
    });
    return this;
  }
  addLink() {
    return this;
  }
  addLinks() {
    return this;
  }
  setStatus(s) {
    if (this.endTime === 0) {
      this.code = s.code;
      this.message = s.message;
    }
    return this;
  }
  updateName(n) {
    this.name = n;
    return this;
  }
  isRecording() {
    return this.endTime === 0;
  }
  recordException(e) {
    const attributes =
      typeof e === 'string'
        ? { 'exception.message': e }
        : { 'exception.type': e?.name, 'exception.message': e?.message, 'exception.stacktrace': e?.stack };
    return this.addEvent('exception', attributes);
  }
  end() {
    if (this.endTime !== 0) return;
    this.endTime = now();
    this.processor.onEnd(this);
  }
}
const ORIGIN = performance.timeOrigin;
const now = () => ORIGIN + performance.now();

class LeanTracer {
  constructor(provider, scope) {
    this.provider = provider;
    this.scope = scope;
  }
  startSpan(name, options = {}, ctx = api.context.active()) {
    if (isTracingSuppressed(ctx)) return api.trace.wrapSpanContext(INVALID);
    const parent = options.root ? undefined : api.trace.getSpanContext(ctx);
    const valid = parent !== undefined && api.isSpanContextValid(parent);
    const ids = this.provider.idGenerator;
    const traceId = valid ? parent.traceId : ids.generateTraceId();
    const spanId = ids.generateSpanId();
    const kind = options.kind ?? 0;
    const result = this.provider.sampler.shouldSample(
      ctx,
      traceId,
      name,
      kind,
      options.attributes ?? {},
      options.links ?? [],
    );
    const traceState = result.traceState ?? (valid ? parent.traceState : undefined);
    if (result.decision !== 2) return api.trace.wrapSpanContext({ traceId, spanId, traceFlags: 0, traceState });
    const sc = { traceId, spanId, traceFlags: 1, traceState, isRemote: false };
    return new LeanSpan(
      this.provider.processor,
      this.scope,
      sc,
      valid ? parent : undefined,
      name,
      kind,
      options.startTime === undefined ? now() : toMs(options.startTime),
      options.attributes,
    );
  }
  startActiveSpan(name, a, b, c) {
    let opts, ctx, fn;
    if (typeof a === 'function') fn = a;
    else if (typeof b === 'function') {
      opts = a;
      fn = b;
    } else {
      opts = a;
      ctx = b;
      fn = c;
    }
    const parent = ctx ?? api.context.active();
    const span = this.startSpan(name, opts, parent);
    return api.context.with(api.trace.setSpan(parent, span), fn, undefined, span);
  }
}
function toMs(t) {
  if (typeof t === 'number') return t < 1e12 ? ORIGIN + t : t;
  if (Array.isArray(t)) return t[0] * 1000 + t[1] / 1e6;
  return t.getTime();
}

class EncodingProcessor {
  constructor(resource, url, { maxBatch = 2048, delay = 1000, maxQueue = 16384, send = true } = {}, tally) {
    this.send = send;
    this.resource = resource;
    // The resource's asynchronous attributes (host.id) are awaited before the first batch leaves.
    this.settled = false;
    this.ready = Promise.resolve(resource.waitForAsyncAttributes?.())
      .catch(() => undefined)
      .then(() => {
        this.settled = true;
      });
    this.url = new URL(url);
    this.maxBatch = maxBatch;
    this.maxQueue = maxQueue;
    this.tally = tally;
    this.scopes = new Map();
    this.count = 0;
    this.inFlight = 0;
    this.sending = new Set();
    this.agent = new http.Agent({ keepAlive: true, maxSockets: 2 });
    this.timer = setInterval(() => this.flush(), delay).unref();
    this.scratch = new Writer(1024);
  }
  pending(scope) {
    let p = this.scopes.get(scope);
    if (p === undefined) {
      p = { scope, w: new Writer(65536), n: 0 };
      this.scopes.set(scope, p);
    }
    return p;
  }
  onEnd(span) {
    this.enqueue(span.scope, encodeSpan, span);
  }
  /** Encodes `span` with `encode` into its scope's pending batch (or counts it dropped when the queue is full). */
  enqueue(scope, encode, span) {
    if (this.count + this.inFlight >= this.maxQueue) {
      if (this.tally) this.tally.dropped++;
      return;
    }
    const p = this.pending(scope);
    const w = p.w;
    w.tag(2, 2);
    const at = w.start();
    encode(w, span);
    w.finish(at);
    p.n++;
    this.count++;
    if (this.count >= this.maxBatch) this.flush();
  }
  flush() {
    if (!this.settled) return this.ready.then(() => this.flush());
    if (this.count === 0) return Promise.resolve();
    const out = new Writer(64 + [...this.scopes.values()].reduce((s, p) => s + p.w.pos + 64, 0) + 2048);
    out.tag(1, 2);
    const rs = out.start();
    out.tag(1, 2);
    const r = out.start();
    const attrs = this.resource.attributes;
    for (const k in attrs) if (attrs[k] !== undefined) out.keyValue(1, k, attrs[k]);
    out.finish(r);
    for (const p of this.scopes.values()) {
      if (p.n === 0) continue;
      out.tag(2, 2);
      const ss = out.start();
      out.tag(1, 2);
      const sc = out.start();
      out.tag(1, 2);
      out.string(p.scope.name);
      if (p.scope.version) {
        out.tag(2, 2);
        out.string(p.scope.version);
      }
      out.finish(sc);
      out.ensure(p.w.pos);
      out.buf.set(p.w.buf.subarray(0, p.w.pos), out.pos);
      out.pos += p.w.pos;
      out.finish(ss);
      p.w.pos = 0;
      p.n = 0;
    }
    out.finish(rs);
    const spans = this.count;
    this.count = 0;
    this.inFlight += spans;
    const body = out.buf.subarray(0, out.pos);
    // Without sending (a variant): the batch is encoded and counted as exported.
    const sent = !this.send
      ? Promise.resolve().then(() => {
          if (this.tally) this.tally.exported += spans;
        })
      : new Promise((resolve) => {
          const req = http.request(
            {
              method: 'POST',
              hostname: this.url.hostname,
              port: this.url.port,
              path: '/v1/traces',
              agent: this.agent,
              headers: { 'content-type': 'application/x-protobuf', 'content-length': body.length },
            },
            (res) => {
              res.resume();
              res.on('end', () => {
                const ok = res.statusCode < 300;
                if (this.tally) {
                  if (ok) this.tally.exported += spans;
                  else this.tally.failed += spans;
                }
                resolve();
              });
            },
          );
          req.on('error', () => {
            if (this.tally) this.tally.failed += spans;
            resolve();
          });
          req.end(body);
        }).finally(() => {
          this.inFlight -= spans;
          this.sending.delete(sent);
        });
    this.sending.add(sent);
    return sent;
  }
  async shutdown() {
    clearInterval(this.timer);
    await this.flush();
    await Promise.all([...this.sending]);
    this.agent.destroy();
  }
}
function encodeSpan(w, s) {
  w.tag(1, 2);
  w.hex(s.ctx.traceId);
  w.tag(2, 2);
  w.hex(s.ctx.spanId);
  const ts = s.ctx.traceState?.serialize();
  if (ts) {
    w.tag(3, 2);
    w.string(ts);
  }
  if (s.parent !== undefined) {
    w.tag(4, 2);
    w.hex(s.parent.spanId);
  }
  w.tag(5, 2);
  w.string(s.name);
  w.tag(6, 0);
  w.varint(s.kind + 1);
  w.tag(7, 1);
  w.fixed64ms(s.start);
  w.tag(8, 1);
  w.fixed64ms(s.endTime);
  const a = s.attrs;
  for (let i = 0; i < a.length; i += 2) w.keyValue(9, a[i], a[i + 1]);
  if (s.events !== undefined) encodeEvents(w, s.events, false);
  encodeStatus(w, s.code, s.message);
  w.tag(16, 5);
  w.u32(0x100 | 1 | (s.parent?.isRemote ? 0x200 : 0));
}

/** Span.events (11): each event's time (an HrTime when `hrTime`, else epoch ms), name and attributes. */
function encodeEvents(w, events, hrTime) {
  for (const e of events) {
    w.tag(11, 2);
    const at = w.start();
    w.tag(1, 1);
    if (hrTime) w.fixed64hr(e.time);
    else w.fixed64ms(e.time);
    w.tag(2, 2);
    w.string(e.name);
    if (e.attributes)
      for (const k in e.attributes) if (e.attributes[k] !== undefined) w.keyValue(3, k, e.attributes[k]);
    w.finish(at);
  }
}

/** Span.status (15), unless it is UNSET without a message. */
function encodeStatus(w, code, message) {
  if (code === 0 && !message) return;
  w.tag(15, 2);
  const at = w.start();
  if (message) {
    w.tag(2, 2);
    w.string(message);
  }
  w.tag(3, 0);
  w.varint(code);
  w.finish(at);
}

class LeanProvider {
  constructor({ resource, sampler, idGenerator, url, tally, send = true }) {
    this.sampler = sampler;
    this.idGenerator = idGenerator;
    this.tracers = new Map();
    this.processor = new EncodingProcessor(resource, url, { send }, tally);
  }
  getTracer(name, version = '') {
    const key = `${name}@${version}`;
    let t = this.tracers.get(key);
    if (!t) {
      t = new LeanTracer(this, { name, version });
      this.tracers.set(key, t);
    }
    return t;
  }
  register() {
    const { AsyncLocalStorageContextManager } = require('@opentelemetry/context-async-hooks');
    const { W3CTraceContextPropagator } = require('@opentelemetry/core');
    api.context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
    api.propagation.setGlobalPropagator(new W3CTraceContextPropagator());
    api.trace.setGlobalTracerProvider(this);
  }
  forceFlush() {
    return this.processor.flush();
  }
  shutdown() {
    return this.processor.shutdown();
  }
}
module.exports = { LeanProvider, Writer, encodeSpan };

// Encode-at-end for the SDK's own spans: a SpanProcessor that encodes each ended ReadableSpan at once.
function encodeReadable(w, s) {
  const ctx = s.spanContext();
  w.tag(1, 2);
  w.hex(ctx.traceId);
  w.tag(2, 2);
  w.hex(ctx.spanId);
  const ts = ctx.traceState?.serialize();
  if (ts) {
    w.tag(3, 2);
    w.string(ts);
  }
  const parent = s.parentSpanContext;
  if (parent?.spanId) {
    w.tag(4, 2);
    w.hex(parent.spanId);
  }
  w.tag(5, 2);
  w.string(s.name);
  w.tag(6, 0);
  w.varint(s.kind + 1);
  w.tag(7, 1);
  w.fixed64hr(s.startTime);
  w.tag(8, 1);
  w.fixed64hr(s.endTime);
  const a = s.attributes;
  for (const k in a) if (a[k] !== undefined) w.keyValue(9, k, a[k]);
  if (s.droppedAttributesCount) {
    w.tag(10, 0);
    w.varint(s.droppedAttributesCount);
  }
  encodeEvents(w, s.events, true);
  encodeStatus(w, s.status.code, s.status.message);
  w.tag(16, 5);
  w.u32(0x100 | (ctx.traceFlags & 0xff) | (parent?.isRemote ? 0x200 : 0));
}
class EncodeAtEnd extends EncodingProcessor {
  onStart() {}
  onEnd(span) {
    if ((span.spanContext().traceFlags & 1) === 0) return;
    this.enqueue(span.instrumentationScope, encodeReadable, span);
  }
  forceFlush() {
    return this.flush();
  }
}
module.exports.EncodeAtEnd = EncodeAtEnd;
