import { request } from '../support/http';
import { createTestSchema, describeOnEachStore, TestSchema } from '../support/postgres';
import { createTestApp, TestApp } from '../support/test-app';

// The whole contract, over real HTTP, on each store: the SQLite file always, PostgreSQL when configured.
describeOnEachStore('POST /plants (e2e on %s)', (postgres) => {
  let server: TestApp;
  let schema: TestSchema | undefined;
  let plants: string;
  let nextId = 1000;
  const freshId = () => nextId++;

  beforeAll(async () => {
    schema = postgres ? await createTestSchema() : undefined;
    server = await createTestApp(schema ? { DATABASE_URL: schema.url } : {});
    plants = `${server.url}/plants`;
  });
  afterAll(async () => {
    await server.destroy();
    await schema?.drop();
  });

  describe('when the body is a valid NewPlant', () => {
    it('should answer 200 with exactly the Plant: name and tag, never the id', async () => {
      const res = await request(plants, { body: { id: freshId(), name: 'Monstera', tag: 'tropical' } });
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toMatch(/^application\/json/);
      expect(res.body).toEqual({ name: 'Monstera', tag: 'tropical' });
    });

    it('should omit tag when the plant has none (never null)', async () => {
      const res = await request(plants, { body: { id: freshId(), name: 'Fern' } });
      expect(res.status).toBe(200);
      expect(res.text).toBe('{"name":"Fern"}');
    });

    it('should accept unknown properties, and neither echo nor store them', async () => {
      const id = freshId();
      const first = await request(plants, { body: { id, name: 'Aloe', colour: 'green', nested: { a: [1] } } });
      expect(first.status).toBe(200);
      expect(first.body).toEqual({ name: 'Aloe' });
      // Stored without the extra field: a replay without it is identical.
      const replay = await request(plants, { body: { id, name: 'Aloe' } });
      expect(replay.status).toBe(200);
      expect(replay.body).toEqual({ name: 'Aloe' });
    });

    it('should accept a charset parameter on the content type', async () => {
      const res = await request(plants, {
        body: JSON.stringify({ id: freshId(), name: 'Ivy' }),
        headers: { 'content-type': 'application/json; charset=utf-8' },
      });
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ name: 'Ivy' });
    });

    it('should keep unicode text exactly', async () => {
      const name = 'Ficus lyrata 🌿 — Geigenfeige, 琴叶榕';
      const id = freshId();
      expect((await request(plants, { body: { id, name } })).body).toEqual({ name });
      expect((await request(plants, { body: { id, name } })).status).toBe(200);
    });
  });

  describe('when ids are beyond 2^53', () => {
    it.each([
      ['2^53 + 1', '9007199254740993'],
      ['the int64 maximum', '9223372036854775807'],
      ['the int64 minimum', '-9223372036854775808'],
      ['zero', '0'],
    ])('should store %s exactly, distinct from its neighbour', async (_label, id) => {
      const neighbour = (BigInt(id) === 9223372036854775807n ? BigInt(id) - 1n : BigInt(id) + 1n).toString();
      expect((await request(plants, { body: `{"id":${id},"name":"exact"}` })).status).toBe(200);
      expect((await request(plants, { body: `{"id":${neighbour},"name":"neighbour"}` })).status).toBe(200);
      // Rounding would have made these the same row; a conflict on each proves both are exact.
      const conflict = await request(plants, { body: `{"id":${id},"name":"other"}` });
      expect(conflict.body).toEqual({
        error: 409,
        message: `A plant with id ${id} already exists with a different name or tag`,
      });
      expect((await request(plants, { body: `{"id":${neighbour},"name":"neighbour"}` })).status).toBe(200);
    });
  });

  describe('when the same id is sent twice', () => {
    it('should answer an identical replay with 200 and the same Plant', async () => {
      const plant = { id: freshId(), name: 'Calathea', tag: 'prayer' };
      const first = await request(plants, { body: plant });
      const second = await request(plants, { body: plant });
      expect([first.status, second.status]).toEqual([200, 200]);
      expect(second.body).toEqual(first.body);
    });

    it.each([
      ['another name', { name: 'Calathea', tag: 'prayer' }, { name: 'Pothos', tag: 'prayer' }],
      ['another tag', { name: 'Calathea', tag: 'prayer' }, { name: 'Calathea', tag: 'other' }],
      ['a tag where there was none', { name: 'Calathea' }, { name: 'Calathea', tag: 'new' }],
      ['no tag where there was one', { name: 'Calathea', tag: 'prayer' }, { name: 'Calathea' }],
    ])('should answer 409 for %s, and overwrite nothing', async (_label, original, change) => {
      const id = freshId();
      expect((await request(plants, { body: { id, ...original } })).status).toBe(200);
      const res = await request(plants, { body: { id, ...change } });
      expect(res.status).toBe(409);
      expect(res.body).toEqual({
        error: 409,
        message: `A plant with id ${id} already exists with a different name or tag`,
      });
      const replay = await request(plants, { body: { id, ...original } });
      expect(replay.status).toBe(200);
      expect(replay.body).toEqual(original);
    });
  });

  describeBodyValidation(() => server, freshId);

  describe('authentication', () => {
    const REALM = 'Bearer realm="plant-store"';
    const INVALID = 'Bearer realm="plant-store", error="invalid_token"';

    it.each<[string, string | false, string, string]>([
      ['no Authorization header', false, 'Authorization header with a Bearer token is required', REALM],
      ['another scheme', 'Basic dXNlcjpwYXNz', 'Authorization header must have the form "Bearer <token>"', REALM],
      ['a scheme without a token', 'Bearer', 'Authorization header must have the form "Bearer <token>"', REALM],
      ['an unknown token', 'Bearer not-the-token', 'Bearer token is invalid or expired', INVALID],
      ['a token with a suffix', `Bearer test-token-0123456789x`, 'Bearer token is invalid or expired', INVALID],
    ])('should answer 401 for %s with a WWW-Authenticate challenge', async (_label, auth, message, challenge) => {
      const res = await request(plants, { auth, body: { id: 1, name: 'x' } });
      expect(res.status).toBe(401);
      expect(res.body).toEqual({ error: 401, message });
      expect(res.headers.get('www-authenticate')).toBe(challenge);
    });

    it('should accept the scheme name in any case', async () => {
      const res = await request(plants, {
        auth: 'bEaReR test-token-0123456789',
        body: { id: freshId(), name: 'Case' },
      });
      expect(res.status).toBe(200);
    });

    it.each<[string, string | undefined, Record<string, string>]>([
      ['an invalid body', '{"id":"x"}', {}],
      ['malformed JSON', '{"id":', {}],
      ['no body', undefined, {}],
      ['a wrong content type', 'hello', { 'content-type': 'text/plain' }],
      ['an oversized body', 'x'.repeat(2 * 1024 * 1024), {}],
    ])('should check the credential before the body: 401 for %s', async (_label, body, headers) => {
      const res = await request(plants, { auth: false, body, headers });
      expect(res.status).toBe(401);
      expect(res.body).toEqual({ error: 401, message: 'Authorization header with a Bearer token is required' });
    });
  });

  describe('other routes', () => {
    it('should answer 404 with the Error body for an unknown route', async () => {
      const res = await request(`${server.url}/plants/1/leaves`, { method: 'GET' });
      expect(res.status).toBe(404);
      expect(res.body).toEqual({ error: 404, message: 'Cannot GET /plants/1/leaves' });
    });

    it('should answer 404 for another method on /plants', async () => {
      const res = await request(plants, { method: 'DELETE' });
      expect(res.body).toEqual({ error: 404, message: 'Cannot DELETE /plants' });
    });

    it('should serve the API docs without a token', async () => {
      const docs = await request(`${server.url}/docs`, { method: 'GET', auth: false });
      expect(docs.status).toBe(200);
      expect(docs.text).toContain('swagger');
      const json = await request(`${server.url}/docs-json`, { method: 'GET', auth: false });
      expect(json.status).toBe(200);
      expect((json.body as { info: { version: string } }).info.version).toBe('1.0.0');
    });
  });
});

/**
 * The body's validation and parsing, over real HTTP: run on each store, and again with
 * VALIDATION_PIPE=stock, where the same bodies must get the same Error bodies from Nest's own pipe.
 */
function describeBodyValidation(app: () => TestApp, freshId: () => number): void {
  const plants = () => `${app().url}/plants`;

  describe('when the body is not a valid NewPlant', () => {
    it.each<[string, string, string]>([
      ['id as a string', '{"id":"7","name":"x"}', 'id must be an integer in the int64 range'],
      ['a fractional id', '{"id":1.5,"name":"x"}', 'id must be an integer in the int64 range'],
      ['a boolean id', '{"id":true,"name":"x"}', 'id must be an integer in the int64 range'],
      ['a null id', '{"id":null,"name":"x"}', 'id is required'],
      ['no id', '{"name":"x"}', 'id is required'],
      ['a numeric name', '{"id":1,"name":5}', 'name must be a string'],
      ['no name', '{"id":1}', 'name is required'],
      ['an empty name', '{"id":1,"name":""}', 'name must be 1 to 200 characters long'],
      ['a name over 200 characters', `{"id":1,"name":"${'a'.repeat(201)}"}`, 'name must be 1 to 200 characters long'],
      ['a NUL in the name', '{"id":1,"name":"a\\u0000b"}', 'name must be Unicode text without NUL characters'],
      ['an unpaired surrogate', '{"id":1,"name":"a\\ud800"}', 'name must be Unicode text without NUL characters'],
      ['a null tag', '{"id":1,"name":"x","tag":null}', 'tag must be a string'],
      ['a numeric tag', '{"id":1,"name":"x","tag":3}', 'tag must be a string'],
      [
        'a tag over 100 characters',
        `{"id":1,"name":"x","tag":"${'t'.repeat(101)}"}`,
        'tag must be 1 to 100 characters long',
      ],
      [
        'everything wrong',
        '{"id":"7","name":5,"tag":null}',
        'id must be an integer in the int64 range; name must be a string; tag must be a string',
      ],
      ['an empty object', '{}', 'id is required; name is required'],
    ])('should answer 400 for %s, naming every violated field', async (_label, body, message) => {
      const res = await request(plants(), { body });
      expect(res.body).toEqual({ error: 400, message });
      expect(res.status).toBe(400);
    });

    it.each([
      ['above the int64 range', '9223372036854775808'],
      ['below the int64 range', '-9223372036854775809'],
      ['far above the range', '1' + '0'.repeat(400)],
      ['a fraction a double cannot hold', '9007199254740993.5'],
      ['an exponent beyond the range', '1e300'],
    ])('should answer 400 for an id %s', async (_label, id) => {
      const res = await request(plants(), { body: `{"id":${id},"name":"x"}` });
      expect(res.status).toBe(400);
      expect(res.body).toEqual({ error: 400, message: 'id must be an integer in the int64 range' });
    });

    it('should accept names of exactly 200 characters', async () => {
      const name = 'n'.repeat(200);
      expect((await request(plants(), { body: { id: freshId(), name } })).body).toEqual({ name });
    });
  });

  describe('when the body is missing or not a JSON object', () => {
    it.each<[string, string | undefined, Record<string, string>, string]>([
      ['no body at all', undefined, {}, 'Request body is required: send a JSON object'],
      [
        'an empty JSON body',
        '',
        { 'content-type': 'application/json' },
        'Request body is required: send a JSON object',
      ],
      ['malformed JSON', '{"id":1,', { 'content-type': 'application/json' }, 'Request body is not valid JSON'],
      [
        'malformed JSON with a long number',
        '{"id":12345678901234567890',
        { 'content-type': 'application/json' },
        'Request body is not valid JSON',
      ],
      [
        'an array',
        '[{"id":1,"name":"x"}]',
        { 'content-type': 'application/json' },
        'Request body must be a JSON object',
      ],
      ['a string', '"plant"', { 'content-type': 'application/json' }, 'Request body must be a JSON object'],
      ['a number', '42', { 'content-type': 'application/json' }, 'Request body must be a JSON object'],
      ['null', 'null', { 'content-type': 'application/json' }, 'Request body must be a JSON object'],
    ])('should answer 400 for %s', async (_label, body, headers, message) => {
      const res = await request(plants(), { body, headers });
      expect(res.status).toBe(400);
      expect(res.body).toEqual({ error: 400, message: expect.stringContaining(message) });
    });

    it('should answer 415 for a body that is not application/json', async () => {
      const res = await request(plants(), {
        body: 'id=1&name=x',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
      });
      expect(res.status).toBe(415);
      expect(res.body).toEqual({ error: 415, message: 'Content-Type must be application/json' });
    });

    it('should answer 415 for text/plain, even when it holds JSON', async () => {
      const res = await request(plants(), { body: '{"id":1,"name":"x"}', headers: { 'content-type': 'text/plain' } });
      expect(res.body).toEqual({ error: 415, message: 'Content-Type must be application/json' });
    });

    it('should answer 413 for a body over the limit', async () => {
      const res = await request(plants(), { body: `{"id":1,"name":"${'x'.repeat(1024 * 1024)}"}` });
      expect(res.status).toBe(413);
      expect(res.body).toEqual({ error: 413, message: 'Request body is larger than the limit of 1048576 bytes' });
    });

    it('should read a 1 MiB number in an unknown field as ignored, and stay live meanwhile', async () => {
      const id = freshId();
      const head = `{"id":${id},"name":"Zeros","x":1`;
      const body = head + '0'.repeat(1024 * 1024 - head.length - 2) + '1}';
      const [created, live] = await Promise.all([
        request(plants(), { body }),
        request(`${app().url}/health/live`, { method: 'GET' }),
      ]);
      expect(created.body).toEqual({ name: 'Zeros' });
      expect(live.status).toBe(200);
    });

    it('should answer 400 for an id that is a 1 MiB number literal', async () => {
      const head = '{"name":"Zeros","id":1';
      const res = await request(plants(), { body: head + '0'.repeat(1024 * 1024 - head.length - 2) + '1}' });
      expect(res.body).toEqual({ error: 400, message: 'id must be an integer in the int64 range' });
    });

    it('should answer 400 for a body nested deeper than 64 levels', async () => {
      const res = await request(plants(), { body: `{"id":1,"name":"x","deep":${'['.repeat(500_000)}}` });
      expect(res.body).toEqual({ error: 400, message: 'Request body is nested deeper than 64 levels' });
    });

    it('should keep the last of a repeated key, whichever parser path reads the body', async () => {
      const [small, large] = [freshId(), 9007199254740993n + BigInt(freshId())];
      const first = await request(plants(), { body: `{"id":${large},"name":"First","name":"Last","id":${small}}` });
      expect(first.body).toEqual({ name: 'Last' });
      const second = await request(plants(), { body: `{"id":${small},"name":"A","id":${large},"name":"B"}` });
      expect(second.body).toEqual({ name: 'B' });
      expect((await request(`${plants()}/${large}`, { method: 'GET' })).text).toBe(`{"id":${large},"name":"B"}`);
    });

    it('should drop a __proto__ key spelled with escapes like any unknown field', async () => {
      const id = 9007199254740993n + BigInt(freshId());
      const res = await request(plants(), { body: `{"\\u005f_proto__":{"polluted":true},"id":${id},"name":"Safe"}` });
      expect(res.body).toEqual({ name: 'Safe' });
      expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    });

    it('should drop __proto__ keys like any unknown field', async () => {
      const res = await request(plants(), { body: `{"__proto__":{"polluted":true},"id":${freshId()},"name":"Safe"}` });
      expect(res.body).toEqual({ name: 'Safe' });
      expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    });
  });
}

// Nest's own ValidationPipe instead of the compiled rules (src/validation/README.md): every answer
// stays the same. The store plays no part in validation, so the SQLite file alone.
describe('POST /plants with VALIDATION_PIPE=stock (e2e on SQLite)', () => {
  let server: TestApp;
  let nextId = 1000;

  beforeAll(async () => {
    server = await createTestApp({ VALIDATION_PIPE: 'stock' });
  });
  afterAll(() => server.destroy());

  it('should store and answer a valid NewPlant as with the compiled pipe', async () => {
    const res = await request(`${server.url}/plants`, { body: '{"id":9007199254740993,"name":"Stock","tag":"t"}' });
    expect(res.body).toEqual({ name: 'Stock', tag: 't' });
    const stored = await request(`${server.url}/plants/9007199254740993`, { method: 'GET' });
    expect(stored.text).toBe('{"id":9007199254740993,"name":"Stock","tag":"t"}');
  });

  describeBodyValidation(
    () => server,
    () => nextId++,
  );
});
