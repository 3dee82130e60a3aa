'use strict';
// The baseline: plain Fastify doing the work Plant Store does, without Nest (bench/README.md): the same
// checks, bearer check, int64 care, insert semantics, keyset pages, Error body, request ids, security
// headers and metrics. Run by bench/run.js; prints "Listening on <url>".
const { createHash, randomUUID, timingSafeEqual } = require('node:crypto');
const { mkdirSync } = require('node:fs');
const { dirname } = require('node:path');
const Fastify = require('fastify');
const { Counter, Histogram, Registry } = require('prom-client');
const { isInteger, isSafeNumber, parse: parseLossless } = require('lossless-json');

// The same int64 care as the service: JSON.parse unless a 16+ digit run may hold an unsafe number.
const MAY_HOLD_UNSAFE_NUMBER = /\d(?:\.?\d){15}/;
const parseNumber = (literal) =>
  isInteger(literal) && literal.length <= 20
    ? Number.isSafeInteger(Number(literal))
      ? Number(literal)
      : BigInt(literal)
    : isSafeNumber(literal)
      ? Number(literal)
      : Number.NaN;

const TEXT = '^[^\\u0000\\uD800-\\uDFFF]*$';
const newPlant = {
  type: 'object',
  required: ['id', 'name'],
  properties: {
    id: { type: 'integer' }, // the int64 range check is on bigint in the service; bench ids are small
    name: { type: 'string', minLength: 1, maxLength: 200, pattern: TEXT },
    tag: { type: 'string', minLength: 1, maxLength: 100, pattern: TEXT },
  },
};
const plant = { type: 'object', required: ['name'], properties: { name: { type: 'string' }, tag: { type: 'string' } } };
const error = { type: 'object', properties: { error: { type: 'integer' }, message: { type: 'string' } } };
const plantWithId = {
  type: 'object',
  required: ['id', 'name'],
  properties: { id: { type: 'integer' }, name: { type: 'string' }, tag: { type: 'string' } },
};
const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;
const int64 = (text) => {
  if (typeof text !== 'string' || text.length > 32 || !/^-?[0-9]+$/.test(text)) return undefined;
  const value = BigInt(text);
  return value >= INT64_MIN && value <= INT64_MAX ? value : undefined;
};
const withoutNullTag = (row) => (row.tag === null ? { id: row.id, name: row.name } : row);

const digest = (token) => createHash('sha256').update(token).digest();
const tokens = (process.env.AUTH_TOKENS ?? '').split(',').filter(Boolean).map(digest);
const BEARER = /^bearer +([A-Za-z0-9\-._~+/]+=*) *$/i;

function openStore(url) {
  if (url.startsWith('sqlite:')) {
    const Database = require('better-sqlite3');
    const path = url.slice('sqlite:'.length);
    mkdirSync(dirname(path), { recursive: true });
    const db = new Database(path);
    db.pragma('journal_mode = WAL');
    // FULL like the service; the bench's headline comparison also runs it at NORMAL (no fsync per commit).
    db.pragma(`synchronous = ${process.env.BASELINE_SQLITE_SYNCHRONOUS === 'NORMAL' ? 'NORMAL' : 'FULL'}`);
    db.defaultSafeIntegers(true);
    db.exec('CREATE TABLE IF NOT EXISTS plants (id INTEGER PRIMARY KEY, name TEXT NOT NULL, tag TEXT) STRICT');
    const insert = db.prepare('INSERT INTO plants (id, name, tag) VALUES (?, ?, ?) ON CONFLICT (id) DO NOTHING');
    const select = db.prepare('SELECT name, tag FROM plants WHERE id = ?');
    const one = db.prepare('SELECT id, name, tag FROM plants WHERE id = ?');
    const first = db.prepare('SELECT id, name, tag FROM plants ORDER BY id LIMIT ?');
    const after = db.prepare('SELECT id, name, tag FROM plants WHERE id > ? ORDER BY id LIMIT ?');
    const remove = db.prepare('DELETE FROM plants WHERE id = ?');
    return {
      create: async (id, name, tag) => {
        if (insert.run(BigInt(id), name, tag).changes === 1) return true;
        const row = select.get(BigInt(id));
        return row.name === name && row.tag === tag;
      },
      list: async (limit, cursor) => (cursor === undefined ? first.all(limit) : after.all(cursor, limit)),
      get: async (id) => one.get(id),
      remove: async (id) => remove.run(id).changes === 1,
      close: async () => db.close(),
    };
  }
  const { Pool } = require('pg');
  const pool = new Pool({ connectionString: url, max: Number(process.env.DATABASE_POOL_MAX ?? 10) });
  const ready = pool.query('CREATE TABLE IF NOT EXISTS plants (id BIGINT PRIMARY KEY, name TEXT NOT NULL, tag TEXT)');
  return {
    ready,
    create: async (id, name, tag) => {
      const inserted = await pool.query(
        'INSERT INTO plants (id, name, tag) VALUES ($1, $2, $3) ON CONFLICT (id) DO NOTHING',
        [String(id), name, tag],
      );
      if (inserted.rowCount === 1) return true;
      const { rows } = await pool.query('SELECT name, tag FROM plants WHERE id = $1', [String(id)]);
      return rows[0].name === name && rows[0].tag === tag;
    },
    list: async (limit, cursor) => {
      const { rows } =
        cursor === undefined
          ? await pool.query('SELECT id::text AS id, name, tag FROM plants ORDER BY plants.id LIMIT $1', [limit])
          : await pool.query('SELECT id::text AS id, name, tag FROM plants WHERE id > $1 ORDER BY plants.id LIMIT $2', [
              String(cursor),
              limit,
            ]);
      return rows.map((row) => ({ ...row, id: BigInt(row.id) }));
    },
    get: async (id) => {
      const { rows } = await pool.query('SELECT id::text AS id, name, tag FROM plants WHERE id = $1', [String(id)]);
      return rows[0] && { ...rows[0], id: BigInt(rows[0].id) };
    },
    remove: async (id) => (await pool.query('DELETE FROM plants WHERE id = $1', [String(id)])).rowCount === 1,
    close: () => pool.end(),
  };
}

async function main() {
  const store = openStore(process.env.DATABASE_URL);
  await store.ready;
  const app = Fastify({
    logger: false,
    ajv: { customOptions: { coerceTypes: false } },
    // The service's request ids: the caller's when plain, a UUID otherwise.
    requestIdHeader: false,
    genReqId: (raw) => {
      const given = raw.headers['x-request-id'];
      return typeof given === 'string' && /^[A-Za-z0-9._:-]{1,128}$/.test(given) ? given : randomUUID();
    },
  });

  app.removeAllContentTypeParsers();
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (_request, text, done) => {
    try {
      const value = MAY_HOLD_UNSAFE_NUMBER.test(text) ? parseLossless(text, undefined, parseNumber) : JSON.parse(text);
      if (typeof value !== 'object' || value === null || Array.isArray(value))
        throw new Error('Request body must be a JSON object');
      done(null, value);
    } catch (err) {
      err.statusCode = 400;
      done(err, undefined);
    }
  });
  app.setErrorHandler((err, _request, reply) => {
    const status = err.statusCode ?? 500;
    const message = err.validation ? err.message : status >= 500 ? 'Internal server error' : err.message;
    reply.code(status).send({ error: status, message });
  });
  // The headers the service sends on every API answer (helmet's API set, as the service reads it off).
  const securityHeaders = {
    'content-security-policy': "default-src 'none';frame-ancestors 'none'",
    'cross-origin-resource-policy': 'same-origin',
    'referrer-policy': 'no-referrer',
    'strict-transport-security': 'max-age=31536000; includeSubDomains',
    'x-content-type-options': 'nosniff',
    'x-frame-options': 'DENY',
    'cache-control': 'no-store',
  };
  const registry = new Registry();
  const labelNames = ['method', 'route', 'status'];
  const requests = new Counter({ name: 'http_requests_total', help: 'requests', labelNames, registers: [registry] });
  const duration = new Histogram({
    name: 'http_request_duration_seconds',
    help: 'durations',
    labelNames,
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
    registers: [registry],
  });
  app.addHook('onRequest', (request, reply, done) => {
    reply.header('x-request-id', request.id);
    reply.headers(securityHeaders);
    done();
  });
  app.addHook('onResponse', (request, reply, done) => {
    const labels = { method: request.method, route: request.routeOptions.url ?? 'unmatched', status: reply.statusCode };
    requests.inc(labels);
    duration.observe(labels, reply.elapsedTime / 1000);
    done();
  });
  app.addHook('onRequest', async (request, reply) => {
    const token = BEARER.exec(request.headers.authorization ?? '')?.[1];
    let accepted = false;
    if (token !== undefined) {
      const presented = digest(token);
      for (const known of tokens) accepted = timingSafeEqual(presented, known) || accepted;
    }
    if (!accepted) {
      reply.header('WWW-Authenticate', 'Bearer realm="plant-store"');
      reply.code(401).send({ error: 401, message: 'Bearer token is invalid or expired' });
    }
  });

  app.post(
    '/plants',
    { schema: { body: newPlant, response: { 200: plant, '4xx': error } } },
    async (request, reply) => {
      const { id, name, tag } = request.body;
      if (!(await store.create(id, name, tag ?? null))) {
        return reply
          .code(409)
          .send({ error: 409, message: `A plant with id ${id} already exists with a different name or tag` });
      }
      return tag === undefined ? { name } : { name, tag };
    },
  );
  app.get(
    '/plants',
    { schema: { response: { 200: { type: 'array', items: plantWithId }, '4xx': error } } },
    async (request, reply) => {
      const { limit: limitText, after: afterText } = request.query;
      const limit = limitText === undefined ? 100 : /^[0-9]{1,6}$/.test(limitText) ? Number(limitText) : 0;
      const cursor = afterText === undefined ? undefined : int64(afterText);
      if (limit < 1 || limit > 1000 || (afterText !== undefined && cursor === undefined)) {
        return reply.code(400).send({ error: 400, message: 'limit or after is not valid' });
      }
      const rows = await store.list(limit + 1, cursor);
      if (rows.length > limit) {
        rows.length = limit;
        reply.header('link', `</plants?limit=${limit}&after=${rows[limit - 1].id}>; rel="next"`);
      }
      return rows.map(withoutNullTag);
    },
  );
  app.get('/plants/:id', { schema: { response: { 200: plantWithId, '4xx': error } } }, async (request, reply) => {
    const id = int64(request.params.id);
    if (id === undefined) return reply.code(400).send({ error: 400, message: 'id is not valid' });
    const row = await store.get(id);
    if (row === undefined) return reply.code(404).send({ error: 404, message: `No plant with id ${id}` });
    return withoutNullTag(row);
  });
  app.delete('/plants/:id', { schema: { response: { '4xx': error } } }, async (request, reply) => {
    const id = int64(request.params.id);
    if (id === undefined) return reply.code(400).send({ error: 400, message: 'id is not valid' });
    if (!(await store.remove(id))) return reply.code(404).send({ error: 404, message: `No plant with id ${id}` });
    return reply.code(204).send();
  });
  app.addHook('onClose', () => store.close());
  const url = await app.listen({ port: Number(process.env.PORT ?? 0), host: '127.0.0.1' });
  console.log(`Listening on ${url}`);
  process.once('SIGTERM', () => app.close().then(() => process.exit(0)));
}

main().catch((err) => {
  console.error(err.message);
  process.exit(1);
});
