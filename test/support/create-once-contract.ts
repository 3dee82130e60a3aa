import { isDeepStrictEqual } from 'node:util';
import { parse, parseNumberAndBigInt, stringify } from 'lossless-json';
import { HttpResult, request } from './http';
import { createTestSchema, describeOnEachStore, TestSchema } from './postgres';
import { createTestApp, TestApp } from './test-app';

type Fields = Record<string, unknown>;

/** What a create-once resource (replay 200, conflict 409, get by id) gives the contract suite. */
export interface CreateOnceResource {
  /** The collection: creates are POSTed here, `${path}/{id}` reads one. */
  readonly path: string;
  /** The singular in words, as given to the presets: "plant". */
  readonly name: string;
  /** The article, as given to the presets; by default "an" before a vowel, "a" otherwise. */
  readonly article?: 'a' | 'an';
  /** What a 409 says differs, as given to `CreateOnceOperation`; "different content" by default. */
  readonly differs?: string;
  /** The fields of a valid body beside `id`. */
  readonly valid: Fields;
  /** Other valid fields: the same id with these is a 409. */
  readonly differing: Fields;
  /**
   * The JSON a create answers; by default the body itself, `{"id":<id>,…fields}`. Compared as values
   * (`exactJson`): the answer's fields come in the response DTO's order, whatever order this has.
   */
  readonly created?: (id: string, fields: Fields) => string;
  /** The JSON `GET ${path}/{id}` answers, compared the same way; by default the body itself. */
  readonly read?: (id: string, fields: Fields) => string;
  /** The resource's own field cases: the fields beside a valid id (an `id` among them replaces it), and the 400 message. */
  readonly invalid: readonly (readonly [label: string, fields: Fields, message: string])[];
  /** More pairs of stored fields and other fields under the same id that must be a 409. */
  readonly conflicts?: readonly (readonly [label: string, stored: Fields, other: Fields])[];
}

const MAX = '9223372036854775807';
const MIN = '-9223372036854775808';

/** The fields as JSON text, a bigint field as its exact digits (JSON.stringify cannot write one), an `undefined` one left out. */
function jsonOf(fields: Fields): string {
  return stringify(fields) as string;
}

/** A body as JSON text with `id` written exactly as given, and the fields as `jsonOf` writes them. */
export function bodyOf(id: string, fields: Fields): string {
  if (Object.hasOwn(fields, 'id')) return jsonOf(fields);
  const rest = jsonOf(fields).slice(1);
  return rest === '}' ? `{"id":${id}}` : `{"id":${id},${rest}`;
}

/**
 * A JSON text as a value, every integer read exactly (a bigint) and every other number as a double:
 * two texts are equal values whatever their fields' order, while an int64 rounded, written as a
 * string or in a double's form (`9.2e18`) differs from its exact digits.
 */
export function exactJson(text: string): unknown {
  return parse(text, null, parseNumberAndBigInt);
}

/** The 400s every int64-keyed body answers for its id, whatever its other fields (`valid`). */
export function idCases(valid: Fields): [label: string, body: string, message: string][] {
  const bad = 'id must be an integer in the int64 range';
  return [
    ['no id', jsonOf(valid), 'id is required'],
    ['a null id', bodyOf('null', valid), 'id is required'],
    ['an id as a string', bodyOf('"7"', valid), bad],
    ['a boolean id', bodyOf('true', valid), bad],
    ['a fractional id', bodyOf('1.5', valid), bad],
    ['an id above the int64 range', bodyOf('9223372036854775808', valid), bad],
    ['an id below the int64 range', bodyOf('-9223372036854775809', valid), bad],
    ['an id far above the range', bodyOf('1' + '0'.repeat(400), valid), bad],
    ['an exponent beyond the range', bodyOf('1e300', valid), bad],
    ['a fraction a double cannot hold', bodyOf('9007199254740993.5', valid), bad],
  ];
}

/**
 * The contract of a create-once resource over real HTTP, on each store (a SQLite file; a fresh
 * PostgreSQL schema when TEST_DATABASE_URL is set), through the app `createTestApp` builds: create
 * and replay, conflict, the int64 range, racing creates of one id, 401, 404, path ids, 414, the
 * resource's field cases, and a restart that keeps the data. A resource adds only its own cases.
 */
export function describeCreateOnceContract(resource: CreateOnceResource): void {
  const created = (id: string, fields: Fields) => exactJson((resource.created ?? bodyOf)(id, fields));
  const read = (id: string, fields: Fields) => exactJson((resource.read ?? bodyOf)(id, fields));
  const answer = (res: HttpResult) => exactJson(res.text);
  const differs = resource.differs ?? 'different content';
  const article = resource.article ?? (/^[aeiou]/i.test(resource.name) ? 'an' : 'a');
  const conflict = (id: string) =>
    `${article[0].toUpperCase()}${article.slice(1)} ${resource.name} with id ${id} already exists with ${differs}`;
  const notFound = (id: string) => `No ${resource.name} with id ${id}`;

  describeOnEachStore(`${resource.path}: the create-once contract (e2e on %s)`, (postgres) => {
    let server: TestApp;
    let schema: TestSchema | undefined;
    let nextId = 1000;
    const freshId = () => String(nextId++);
    const env = () => (schema ? { DATABASE_URL: schema.url } : {});
    const url = (path = '') => `${server.url}${resource.path}${path}`;
    const create = (id: string, fields: Fields) => request(url(), { body: bodyOf(id, fields) });
    const get = (id: string, auth?: string | false) => request(url(`/${id}`), { method: 'GET', auth });

    beforeAll(async () => {
      schema = postgres ? await createTestSchema() : undefined;
      server = await createTestApp(env());
    });
    afterAll(async () => {
      await server.destroy();
      await schema?.drop();
    });

    describe('when a valid body is created', () => {
      it('should answer 200, then the same for an identical replay, and serve it by id', async () => {
        const id = freshId();
        const first = await create(id, resource.valid);
        expect(first.status).toBe(200);
        expect(first.headers.get('content-type')).toMatch(/^application\/json/);
        expect(answer(first)).toEqual(created(id, resource.valid));
        const replay = await create(id, resource.valid);
        expect([replay.status, replay.text]).toEqual([200, first.text]);
        const stored = await get(id);
        expect([stored.status, answer(stored)]).toEqual([200, read(id, resource.valid)]);
      });

      it.each<readonly [string, Fields, Fields]>([
        ['the differing body', resource.valid, resource.differing],
        ...(resource.conflicts ?? []),
      ])('should answer 409 for %s under a stored id, and overwrite nothing', async (_label, stored, other) => {
        const id = freshId();
        expect((await create(id, stored)).status).toBe(200);
        const res = await create(id, other);
        expect(res.status).toBe(409);
        expect(res.body).toEqual({ error: 409, message: conflict(id) });
        expect(answer(await get(id))).toEqual(read(id, stored));
        expect(answer(await create(id, stored))).toEqual(created(id, stored));
      });
    });

    describe('when ids are at the ends of int64 and beyond 2^53', () => {
      it.each([
        ['zero', '0'],
        ['2^53 + 1', '9007199254740993'],
        ['the int64 maximum', MAX],
        ['the int64 minimum', MIN],
      ])('should store %s exactly, distinct from its neighbour', async (_label, id) => {
        const neighbour = String(id === MAX ? BigInt(id) - 1n : BigInt(id) + 1n);
        expect(answer(await create(id, resource.valid))).toEqual(created(id, resource.valid));
        expect(answer(await create(neighbour, resource.differing))).toEqual(created(neighbour, resource.differing));
        // Rounding would have made these one row: each reads back as stored, and conflicts on its own.
        expect(answer(await get(id))).toEqual(read(id, resource.valid));
        expect(answer(await get(neighbour))).toEqual(read(neighbour, resource.differing));
        expect((await create(id, resource.differing)).body).toEqual({ error: 409, message: conflict(id) });
      });
    });

    describe('when the body is not valid', () => {
      it.each(idCases(resource.valid))('should answer 400 for %s', async (_label, body, message) => {
        const res = await request(url(), { body });
        expect(res.body).toEqual({ error: 400, message });
        expect(res.status).toBe(400);
      });

      if (resource.invalid.length > 0) {
        it.each(resource.invalid)('should answer 400 for %s, naming the field', async (_label, fields, message) => {
          const res = await create(freshId(), fields);
          expect(res.body).toEqual({ error: 400, message });
          expect(res.status).toBe(400);
        });
      }
    });

    describe('when creates of one id race', () => {
      it('should answer every identical create 200 with the same body', async () => {
        const id = freshId();
        const answers = await Promise.all(Array.from({ length: 16 }, () => create(id, resource.valid)));
        expect(answers.map((res) => [res.status, answer(res)])).toEqual(
          answers.map(() => [200, created(id, resource.valid)]),
        );
      });

      it('should store one of two different bodies: its creates 200, the others 409', async () => {
        const id = freshId();
        const bodies = Array.from({ length: 16 }, (_, i) => (i % 2 === 0 ? resource.valid : resource.differing));
        const answers = await Promise.all(bodies.map((fields) => create(id, fields)));
        const stored = answer(await get(id));
        const winner = isDeepStrictEqual(stored, read(id, resource.valid)) ? resource.valid : resource.differing;
        expect(stored).toEqual(read(id, winner));
        expect(answers.map((res) => [res.status, res.status === 200 ? answer(res) : res.body])).toEqual(
          bodies.map((fields) =>
            fields === winner ? [200, created(id, winner)] : [409, { error: 409, message: conflict(id) }],
          ),
        );
      });
    });

    describe('authentication', () => {
      it.each<[string, string | false, string]>([
        ['no token', false, 'Bearer realm="plant-store"'],
        ['an unknown token', 'Bearer not-the-token', 'Bearer realm="plant-store", error="invalid_token"'],
      ])('should answer 401 for %s, before reading the body or the path id', async (_label, auth, challenge) => {
        const id = freshId();
        for (const res of [
          await request(url(), { auth, body: bodyOf(id, resource.valid) }),
          await request(url(), { auth, body: '{"id":"x"}' }),
          await get(id, auth),
          await get('not-an-id', auth),
        ]) {
          expect(res.status).toBe(401);
          expect((res.body as { error: number }).error).toBe(401);
          expect(res.headers.get('www-authenticate')).toBe(challenge);
        }
        // Nothing was stored.
        expect((await get(id)).status).toBe(404);
      });
    });

    describe('GET by id', () => {
      it('should answer 404 with the Error body for an id nothing has, even beside a stored neighbour', async () => {
        // Beyond 2^53, where a rounded id would find the neighbour.
        const stored = String(2n ** 62n + BigInt(freshId()) * 2n);
        const missing = String(BigInt(stored) + 1n);
        expect((await create(stored, resource.valid)).status).toBe(200);
        const res = await get(missing);
        expect(res.status).toBe(404);
        expect(res.body).toEqual({ error: 404, message: notFound(missing) });
      });

      it.each(['abc', '1.5', '1e3', '0x10', '9223372036854775808', '-9223372036854775809', '%2B1', '%201', '١'])(
        'should answer 400 for the path id %s, never 404 or a rounded id',
        async (id) => {
          const res = await get(id);
          expect(res.status).toBe(400);
          expect(res.body).toEqual({ error: 400, message: 'id must be a decimal integer in the int64 range' });
        },
      );

      it('should answer 414 for a path id longer than 100 characters', async () => {
        const res = await get('1'.repeat(101));
        expect(res.status).toBe(414);
        expect(res.body).toEqual({ error: 414, message: 'A path parameter is longer than 100 characters' });
      });
    });

    // Last: it replaces the server the other tests share.
    describe('after a restart on the same store', () => {
      it('should still serve what was stored, replay it, and refuse other content', async () => {
        const id = '9007199254740995';
        expect((await create(id, resource.valid)).status).toBe(200);
        await server.close();
        server = await createTestApp(env(), server.dataDir);
        expect(answer(await get(id))).toEqual(read(id, resource.valid));
        expect(answer(await create(id, resource.valid))).toEqual(created(id, resource.valid));
        expect((await create(id, resource.differing)).body).toEqual({ error: 409, message: conflict(id) });
      });
    });
  });
}
