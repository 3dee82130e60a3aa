import { bodyOf, CreateOnceResource, describeCreateOnceContract, idCases } from '../support/create-once-contract';
import { request } from '../support/http';
import { createTestSchema, describeOnEachStore, TestSchema } from '../support/postgres';
import { createTestApp, TestApp } from '../support/test-app';

/** Plants' own field cases: the fields beside a valid id, and the 400 message. */
const PLANT_FIELD_CASES: CreateOnceResource['invalid'] = [
  ['a numeric name', { name: 5 }, 'name must be a string'],
  ['no name', {}, 'name is required'],
  ['an empty name', { name: '' }, 'name must be 1 to 200 characters long'],
  ['a name over 200 characters', { name: 'a'.repeat(201) }, 'name must be 1 to 200 characters long'],
  ['a NUL in the name', { name: 'a\u0000b' }, 'name must be Unicode text without NUL characters'],
  ['an unpaired surrogate', { name: 'a\ud800' }, 'name must be Unicode text without NUL characters'],
  ['a null tag', { name: 'x', tag: null }, 'tag must be a string'],
  ['a numeric tag', { name: 'x', tag: 3 }, 'tag must be a string'],
  ['a tag over 100 characters', { name: 'x', tag: 't'.repeat(101) }, 'tag must be 1 to 100 characters long'],
  [
    'everything wrong',
    { id: '7', name: 5, tag: null },
    'id must be an integer in the int64 range; name must be a string; tag must be a string',
  ],
  // An `id` key replaces the valid id; undefined leaves it out: `{}`.
  ['an empty object', { id: undefined }, 'id is required; name is required'],
];

describeCreateOnceContract({
  path: '/plants',
  name: 'plant',
  differs: 'a different name or tag',
  valid: { name: 'Calathea', tag: 'prayer' },
  differing: { name: 'Pothos', tag: 'prayer' },
  // A Plant carries no id; GET by id answers the NewPlant, the default.
  created: (_id, fields) => JSON.stringify(fields),
  invalid: PLANT_FIELD_CASES,
  conflicts: [
    ['another tag', { name: 'Calathea', tag: 'prayer' }, { name: 'Calathea', tag: 'other' }],
    ['a tag where there was none', { name: 'Calathea' }, { name: 'Calathea', tag: 'new' }],
    ['no tag where there was one', { name: 'Calathea', tag: 'prayer' }, { name: 'Calathea' }],
  ],
});

// What plants add to the create-once contract, over real HTTP, on each store.
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

  describeBodyValidation(() => server, freshId);

  describe('authentication', () => {
    const REALM = 'Bearer realm="plant-store"';
    const INVALID = 'Bearer realm="plant-store", error="invalid_token"';

    it.each<[string, string | false, string, string]>([
      ['another scheme', 'Basic dXNlcjpwYXNz', 'Authorization header must have the form "Bearer <token>"', REALM],
      ['a scheme without a token', 'Bearer', 'Authorization header must have the form "Bearer <token>"', REALM],
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
 * The body's parsing and plants' edge cases, over real HTTP: run on each store, and again with
 * VALIDATION_PIPE=stock, where the same bodies must get the same Error bodies from Nest's own pipe.
 */
function describeBodyValidation(app: () => TestApp, freshId: () => number): void {
  const plants = () => `${app().url}/plants`;

  describe('when the body is not a valid NewPlant', () => {
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

  // On each store, describeCreateOnceContract runs these with the compiled pipe.
  it.each([
    ...idCases({ name: 'x' }),
    ...PLANT_FIELD_CASES.map(([label, fields, message]) => [label, bodyOf('1', fields), message] as const),
  ])('should answer 400 for %s, naming every violated field', async (_label, body, message) => {
    const res = await request(`${server.url}/plants`, { body });
    expect(res.body).toEqual({ error: 400, message });
    expect(res.status).toBe(400);
  });

  describeBodyValidation(
    () => server,
    () => nextId++,
  );
});
