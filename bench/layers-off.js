'use strict';
// For the bench only: a variant of a built service with some of its per-request layers taken out, to
// measure what each costs (bench/README.md, "What each layer costs"). Not part of the product: the
// service never reads BENCH_LAYERS_OFF; this file is preloaded (`node -r bench/layers-off.js
// dist/main.js`) by bench/cpu-per-request.js when a build's --env sets it. Tracing off only (it loads
// the app's modules before main.js, which tracing must precede).
//
//   BENCH_LAYERS_OFF=metrics,headers,request-id,auth-early,on-send,guard,pipe,failure-count
//
// The request log is LOG_LEVEL's (info or warn) and the per-principal rate limit RATE_LIMIT_PER_MINUTE's,
// so neither is here.
const { dirname, join } = require('node:path');

const OFF = new Set((process.env.BENCH_LAYERS_OFF ?? '').split(',').filter(Boolean));
const KNOWN = ['metrics', 'headers', 'request-id', 'auth-early', 'on-send', 'guard', 'pipe', 'failure-count'];
for (const layer of OFF) if (!KNOWN.includes(layer)) throw new Error(`BENCH_LAYERS_OFF: unknown layer ${layer}`);

const dist = dirname(process.argv[1]);
const load = (path) => require(join(dist, path));

if (OFF.has('guard') || OFF.has('pipe')) {
  // The global guard or pipe not registered at all (not a guard that says yes): Nest then skips the step.
  const { AppModule } = load('app.module.js');
  const { APP_GUARD, APP_PIPE } = require('@nestjs/core');
  const forRoot = AppModule.forRoot;
  AppModule.forRoot = function (...args) {
    const module = forRoot.apply(this, args);
    const dropped = (provider) =>
      (OFF.has('guard') && provider.provide === APP_GUARD && provider.useExisting?.name === 'BearerAuthGuard') ||
      (OFF.has('pipe') && provider.provide === APP_PIPE);
    return { ...module, providers: module.providers.filter((provider) => !dropped(provider)) };
  };
}

if (OFF.has('failure-count')) {
  // A failed authentication answered 401 without being counted against its address.
  const { AuthFailureLimiter } = load('auth/auth-failure-limiter.js');
  AuthFailureLimiter.prototype.failed = (_address, unauthorized) => unauthorized;
}

// The Fastify hooks of app.setup.ts, metrics.setup.ts and authenticate-before-body.hook.ts, told apart
// by what their source calls. `auth-early` takes out both of the latter's: the onRequest hook it gives
// each protected operation (through onRoute), and the preParsing one; the guard then refuses.
const HOOKS = [
  { layer: 'metrics', name: 'onResponse', calls: 'observeRequest' },
  { layer: 'auth-early', name: 'onRoute', calls: 'authenticateFirst' },
  { layer: 'auth-early', name: 'preParsing', calls: 'verifyRequest' },
  { layer: 'on-send', name: 'onSend', calls: 'drainThenClose' },
];
const setup = load('app.setup.js');
const createFastifyAdapter = setup.createFastifyAdapter;
setup.createFastifyAdapter = function (...args) {
  const adapter = createFastifyAdapter.apply(this, args);
  const fastify = adapter.getInstance();
  if (OFF.has('request-id')) {
    // Fastify's own kind of id (a counter), no X-Request-Id read or sent.
    let next = 0;
    fastify.setGenReqId(() => `req-${++next}`);
  }
  const addHook = fastify.addHook;
  fastify.addHook = function (name, hook) {
    const source = String(hook);
    if (HOOKS.some((h) => h.name === name && OFF.has(h.layer) && source.includes(h.calls))) return this;
    if (name === 'onRequest' && source.includes('securityHeaders')) {
      // app.setup.ts's one onRequest hook sets the request id and the security headers.
      const headers = !OFF.has('headers');
      const id = !OFF.has('request-id');
      if (!headers && !id) return this;
      if (!headers) {
        return addHook.call(this, name, (request, reply, done) => {
          void reply.header('x-request-id', request.id);
          done();
        });
      }
      if (!id) {
        const { API_SECURITY_HEADERS } = load('http/security-headers.js');
        return addHook.call(this, name, (_request, reply, done) => {
          void reply.headers(API_SECURITY_HEADERS);
          done();
        });
      }
    }
    return addHook.call(this, name, hook);
  };
  return adapter;
};
