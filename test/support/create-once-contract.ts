import { isDeepStrictEqual } from 'node:util';
import { parse, parseNumberAndBigInt, stringify } from 'lossless-json';
import { HttpResult, linkToNext, request } from './http';
import { createTestSchema, describeOnEachStore, TestSchema } from './postgres';
import { createTestApp, TestApp } from './test-app';

type Fields = Record<string, unknown>;

/** What a create-once resource (replay 200, conflict 409; a keyset list, get and delete by id) gives the contract suite. */
export interface CreateOnceResource {
  /** The collection: creates are POSTed here and its pages read from here, `${path}/{id}` reads or deletes one. */
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
  /** The JSON `GET ${path}/{id}` answers, and each item of a page, compared the same way; by default the body itself. */
  readonly read?: (id: string, fields: Fields) => string;
  /** The resource's own field cases: the fields beside a valid id (an `id` among them replaces it), and the 400 message. */
  readonly invalid: readonly (readonly [label: string, fields: Fields, message: string])[];
  /** More pairs of stored fields and other fields under the same id that must be a 409. */
  readonly conflicts?: readonly (readonly [label: string, stored: Fields, other: Fields])[];
}

const MAX = '9223372036854775807';
const MIN = '-9223372036854775808';

/** The fields as JSON text, a bigint field as its exact digits (JSON.stringify cannot write one), an `undefined` one left out. */
export function jsonOf(fields: Fields): string {
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

const LIMIT = 'limit must be a decimal integer from 1 to 1000';
const AFTER = 'after must be a decimal integer in the int64 range';

/** Page parameters every keyset list refuses, with the 400's message. */
export const BAD_PAGE_QUERIES: readonly (readonly [query: string, message: string])[] = [
  ...['limit=0', 'limit=1001', 'limit=abc', 'limit=1.5', 'limit=-1', 'limit=%2B5', 'limit=1e2', 'limit='].map(
    (query) => [query, LIMIT] as const,
  ),
  ['limit=1&limit=2', LIMIT],
  ...[
    'after=9223372036854775808',
    'after=-9223372036854775809',
    'after=1.5',
    'after=1e3',
    'after=abc',
    'after=%201',
  ].map((query) => [query, AFTER] as const),
  ['after=', AFTER],
  ['after=1&after=2', AFTER],
  ['limit=0&after=x', `${LIMIT}; ${AFTER}`],
];

/** Path ids every by-id route refuses with a 400, never a 404 or a rounded id. */
const BAD_PATH_IDS = [
  'abc',
  '1.5',
  '1e3',
  '0x10',
  '9223372036854775808',
  '-9223372036854775809',
  '%2B1',
  '%201',
  '1%20',
  '١',
];

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
 * and replay, conflict, the int64 range, racing creates of one id; the keyset list (its order over
 * the int64 range, pages by `Link`, `limit`, the query's 400s); delete (204 then 404, a create after
 * it is new); 401, 404, path ids, 414, the resource's field cases, and a restart that keeps the data
 * and the deletes. A resource adds only its own cases.
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
    const remove = (id: string, auth?: string | false) => request(url(`/${id}`), { method: 'DELETE', auth });

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
      ])(
        'should answer 401 for %s, before reading the body, the query or the path id',
        async (_label, auth, challenge) => {
          const id = freshId();
          const kept = freshId();
          expect((await create(kept, resource.valid)).status).toBe(200);
          for (const res of [
            await request(url(), { auth, body: bodyOf(id, resource.valid) }),
            await request(url(), { auth, body: '{"id":"x"}' }),
            await request(url(), { method: 'GET', auth }),
            await request(url('?limit=0'), { method: 'GET', auth }),
            await get(id, auth),
            await get('not-an-id', auth),
            await remove(kept, auth),
            await remove('not-an-id', auth),
          ]) {
            expect(res.status).toBe(401);
            expect((res.body as { error: number }).error).toBe(401);
            expect(res.headers.get('www-authenticate')).toBe(challenge);
          }
          // Nothing was stored, nothing deleted.
          expect((await get(id)).status).toBe(404);
          expect(answer(await get(kept))).toEqual(read(kept, resource.valid));
        },
      );
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

      it.each(BAD_PATH_IDS)('should answer 400 for the path id %s, never 404 or a rounded id', async (id) => {
        const res = await get(id);
        expect(res.status).toBe(400);
        expect(res.body).toEqual({ error: 400, message: 'id must be a decimal integer in the int64 range' });
      });

      it('should answer 414 for a path id longer than 100 characters', async () => {
        const res = await get('1'.repeat(101));
        expect(res.status).toBe(414);
        expect(res.body).toEqual({ error: 414, message: 'A path parameter is longer than 100 characters' });
      });
    });

    describe('DELETE by id', () => {
      it('should answer 204 with no body, then 404 for the same id, and the resource is gone', async () => {
        // Beyond 2^53, beside a stored neighbour a rounded id would hit.
        const id = String(2n ** 62n + BigInt(freshId()) * 2n);
        const neighbour = String(BigInt(id) + 1n);
        expect((await create(id, resource.valid)).status).toBe(200);
        expect((await create(neighbour, resource.differing)).status).toBe(200);
        const deleted = await remove(id);
        expect([deleted.status, deleted.text, deleted.headers.get('content-type')]).toEqual([204, '', null]);
        const again = await remove(id);
        expect([again.status, again.body]).toEqual([404, { error: 404, message: notFound(id) }]);
        expect((await get(id)).body).toEqual({ error: 404, message: notFound(id) });
        // The page from just before it starts at its neighbour, which is untouched.
        const page = await request(url(`?limit=1&after=${BigInt(id) - 1n}`), { method: 'GET' });
        expect(answer(page)).toEqual([read(neighbour, resource.differing)]);
      });

      it('should take a create of a deleted id as a new create, with nothing of the deleted one left', async () => {
        const id = freshId();
        expect((await create(id, resource.valid)).status).toBe(200);
        expect((await remove(id)).status).toBe(204);
        // Other content under the id: neither a conflict with the deleted one nor a replay of it.
        const renewed = await create(id, resource.differing);
        expect([renewed.status, answer(renewed)]).toEqual([200, created(id, resource.differing)]);
        expect(answer(await get(id))).toEqual(read(id, resource.differing));
        expect((await create(id, resource.valid)).body).toEqual({ error: 409, message: conflict(id) });
      });

      it('should answer 404 with the Error body for an id nothing has', async () => {
        const missing = String(-(2n ** 62n) - BigInt(freshId()));
        const res = await remove(missing);
        expect([res.status, res.body]).toEqual([404, { error: 404, message: notFound(missing) }]);
      });

      it.each(BAD_PATH_IDS)('should answer 400 for the path id %s, never 404 or a rounded id', async (id) => {
        const res = await remove(id);
        expect([res.status, res.body]).toEqual([
          400,
          { error: 400, message: 'id must be a decimal integer in the int64 range' },
        ]);
      });

      it('should answer 414 for a path id longer than 100 characters', async () => {
        const res = await remove('1'.repeat(101));
        expect([res.status, res.body]).toEqual([
          414,
          { error: 414, message: 'A path parameter is longer than 100 characters' },
        ]);
      });
    });

    describe('GET the list with a page parameter it refuses', () => {
      it.each(BAD_PAGE_QUERIES)('should answer 400 naming the parameter for ?%s', async (query, message) => {
        const res = await request(url(`?${query}`), { method: 'GET' });
        expect([res.status, res.body]).toEqual([400, { error: 400, message }]);
      });
    });

    // Each on a store of its own: a page holds whatever the store holds.
    describe('GET the list', () => {
      let own: TestApp;
      let ownSchema: TestSchema | undefined;
      const list = (query = '') => request(`${own.url}${resource.path}${query}`, { method: 'GET' });
      const store = async (ids: readonly string[]) => {
        const answers = await Promise.all(
          ids.map((id, i) =>
            request(`${own.url}${resource.path}`, {
              body: bodyOf(id, i % 2 === 0 ? resource.valid : resource.differing),
            }),
          ),
        );
        expect(answers.map((res) => res.status)).toEqual(ids.map(() => 200));
        return ids.map((id, i) => read(id, i % 2 === 0 ? resource.valid : resource.differing));
      };
      const link = (query: string) => `<${resource.path}?${query}>; rel="next"`;

      beforeEach(async () => {
        ownSchema = postgres ? await createTestSchema() : undefined;
        own = await createTestApp(ownSchema ? { DATABASE_URL: ownSchema.url } : {});
      });
      afterEach(async () => {
        await own.destroy();
        await ownSchema?.drop();
      });

      it('should answer an empty store with an empty array and no Link', async () => {
        const res = await list();
        expect([res.status, res.text, res.headers.get('link')]).toEqual([200, '[]', null]);
        expect(res.headers.get('content-type')).toMatch(/^application\/json/);
      });

      it('should list in signed id order, ids exact over the int64 range, a page at a time by following Link', async () => {
        const [max, above, zero, min, minusOne] = await store([MAX, '9007199254740993', '0', MIN, '-1']);
        const all = await list();
        expect([all.status, answer(all), all.headers.get('link')]).toEqual([
          200,
          [min, minusOne, zero, above, max],
          null,
        ]);

        const pages: unknown[] = [];
        const links: (string | null)[] = [];
        let next: string | undefined = `${own.url}${resource.path}?limit=2`;
        while (next !== undefined) {
          const res = await request(next, { method: 'GET' });
          expect(res.status).toBe(200);
          pages.push(answer(res));
          links.push(res.headers.get('link'));
          next = linkToNext(res.headers.get('link'), next);
        }
        expect(pages).toEqual([[min, minusOne], [zero, above], [max]]);
        expect(links).toEqual([link('limit=2&after=-1'), link('limit=2&after=9007199254740993'), null]);
      });

      it('should hold 100 by default, and from 1 to 1000 as limit says, with no Link on the last page', async () => {
        const ids = Array.from({ length: 101 }, (_, i) => String(BigInt(i) * 2n ** 56n - 2n ** 62n));
        const items = await store(ids);
        const page = async (query: string) => {
          const res = await list(query);
          expect(res.status).toBe(200);
          return [answer(res), res.headers.get('link')];
        };
        expect(await page('')).toEqual([items.slice(0, 100), link(`limit=100&after=${ids[99]}`)]);
        expect(await page(`?after=${ids[99]}`)).toEqual([items.slice(100), null]);
        expect(await page('?limit=1')).toEqual([items.slice(0, 1), link(`limit=1&after=${ids[0]}`)]);
        expect(await page('?limit=101')).toEqual([items, null]);
        expect(await page('?limit=1000')).toEqual([items, null]);
        expect(await page(`?limit=1&after=${MIN}`)).toEqual([items.slice(0, 1), link(`limit=1&after=${ids[0]}`)]);
        expect(await page(`?limit=1000&after=${MAX}`)).toEqual([[], null]);
      });
    });

    // Last: it replaces the server the other tests share.
    describe('after a restart on the same store', () => {
      it('should still serve what was stored, replay it, and refuse other content; what was deleted stays so', async () => {
        const id = '9007199254740995';
        const deleted = '9007199254740997';
        expect((await create(id, resource.valid)).status).toBe(200);
        expect((await create(deleted, resource.valid)).status).toBe(200);
        expect((await remove(deleted)).status).toBe(204);
        await server.close();
        server = await createTestApp(env(), server.dataDir);
        expect((await get(deleted)).status).toBe(404);
        expect(answer(await get(id))).toEqual(read(id, resource.valid));
        expect(answer(await create(id, resource.valid))).toEqual(created(id, resource.valid));
        expect((await create(id, resource.differing)).body).toEqual({ error: 409, message: conflict(id) });
      });
    });
  });
}
