import { BAD_PAGE_QUERIES } from '../support/create-once-contract';
import { linkToNext, request } from '../support/http';
import { createTestSchema, describeOnEachStore, TestSchema } from '../support/postgres';
import { createTestApp, TestApp } from '../support/test-app';
import { CREATE_DELETE_RACE, expectSettledInSomeOrder, settleRace } from '../support/plants-race';

const MAX = '9223372036854775807';
const MIN = '-9223372036854775808';

/** GET a path of the service. */
const get = (url: string, auth?: string | false) => request(url, { method: 'GET', auth });

describeOnEachStore('GET and DELETE /plants (e2e on %s)', (postgres) => {
  let server: TestApp;
  let schema: TestSchema | undefined;
  let plants: string;

  const boot = async () => {
    schema = postgres ? await createTestSchema() : undefined;
    server = await createTestApp(schema ? { DATABASE_URL: schema.url } : {});
    plants = `${server.url}/plants`;
  };
  const stop = async () => {
    await server.destroy();
    await schema?.drop();
  };

  const create = (body: string) => request(plants, { body });

  describe('each test on an empty store of its own', () => {
    beforeEach(boot);
    afterEach(stop);

    describe('GET /plants', () => {
      it('should answer an empty store with an empty array and no Link', async () => {
        const res = await get(plants);
        expect(res.status).toBe(200);
        expect(res.text).toBe('[]');
        expect(res.headers.get('link')).toBeNull();
      });

      it('should list plants in signed id order, ids exact over the whole int64 range', async () => {
        for (const body of [
          `{"id":${MAX},"name":"max"}`,
          `{"id":9007199254740993,"name":"above 2^53","tag":"exact"}`,
          `{"id":0,"name":"zero"}`,
          `{"id":${MIN},"name":"min","tag":"first"}`,
          `{"id":-1,"name":"minus one"}`,
        ]) {
          expect((await create(body)).status).toBe(200);
        }
        const res = await get(plants);
        expect(res.status).toBe(200);
        expect(res.headers.get('content-type')).toMatch(/^application\/json/);
        // The raw text, since JSON.parse would round the ids it is checking.
        expect(res.text).toBe(
          `[{"id":${MIN},"name":"min","tag":"first"},{"id":-1,"name":"minus one"},{"id":0,"name":"zero"},` +
            `{"id":9007199254740993,"name":"above 2^53","tag":"exact"},{"id":${MAX},"name":"max"}]`,
        );
        expect(res.headers.get('link')).toBeNull();
      });

      it('should walk about 2,500 plants with limit=1000 by following Link, each exactly once and in order', async () => {
        const ids = Array.from({ length: 2500 }, (_, i) => (BigInt(i) - 1250n) * 3_689_348_814_741_910n);
        ids[0] = BigInt(MIN);
        ids[ids.length - 1] = BigInt(MAX);
        for (let i = 0; i < ids.length; i += 100) {
          const batch = ids.slice(i, i + 100);
          const statuses = await Promise.all(batch.map((id) => create(`{"id":${id},"name":"p${id}"}`)));
          expect(statuses.map((res) => res.status)).toEqual(batch.map(() => 200));
        }
        const seen: string[] = [];
        const links: string[] = [];
        let next: string | undefined = `${plants}?limit=1000`;
        while (next !== undefined) {
          const res = await get(next);
          expect(res.status).toBe(200);
          seen.push(...[...res.text.matchAll(/"id":(-?\d+)/g)].map((match) => match[1]));
          const link = res.headers.get('link');
          if (link !== null) links.push(link);
          next = linkToNext(link, next);
        }
        expect(seen).toEqual(ids.map(String));
        expect(links).toEqual([
          `</plants?limit=1000&after=${ids[999]}>; rel="next"`,
          `</plants?limit=1000&after=${ids[1999]}>; rel="next"`,
        ]);
      });

      it('should default to 100 per page and ignore unknown parameters', async () => {
        await Promise.all(Array.from({ length: 101 }, (_, i) => create(`{"id":${i},"name":"n"}`)));
        const res = await get(`${plants}?colour=green`);
        expect((res.body as unknown[]).length).toBe(100);
        expect(res.headers.get('link')).toBe('</plants?limit=100&after=99>; rel="next"');
        const last = await get(`${plants}?after=99&unknown=1`);
        expect(last.text).toBe('[{"id":100,"name":"n"}]');
        expect(last.headers.get('link')).toBeNull();
      });

      it('should give no Link when the page ends exactly at the last plant', async () => {
        for (const id of [1, 2]) await create(`{"id":${id},"name":"n"}`);
        const res = await get(`${plants}?limit=2`);
        expect((res.body as unknown[]).length).toBe(2);
        expect(res.headers.get('link')).toBeNull();
      });

      it('should accept the bounds of limit and after', async () => {
        await create(`{"id":${MIN},"name":"min"}`);
        expect((await get(`${plants}?limit=1&after=${MIN}`)).text).toBe('[]');
        expect((await get(`${plants}?limit=1000&after=${MAX}`)).text).toBe('[]');
        expect((await get(`${plants}?limit=1`)).text).toBe(`[{"id":${MIN},"name":"min"}]`);
      });
    });

    describe('DELETE /plants/{id}', () => {
      it('should answer 204 with no body, then 404 for the same id', async () => {
        await create(`{"id":${MAX},"name":"max"}`);
        await create('{"id":9223372036854775806,"name":"neighbour"}');
        const deleted = await request(`${plants}/${MAX}`, { method: 'DELETE' });
        expect(deleted.status).toBe(204);
        expect(deleted.text).toBe('');
        expect(deleted.headers.get('content-type')).toBeNull();
        const again = await request(`${plants}/${MAX}`, { method: 'DELETE' });
        expect(again.status).toBe(404);
        expect(again.body).toEqual({ error: 404, message: `No plant with id ${MAX}` });
        expect((await get(`${plants}/${MAX}`)).status).toBe(404);
        expect((await get(plants)).text).toBe('[{"id":9223372036854775806,"name":"neighbour"}]');
      });

      it('should ignore a JSON content type with no body, or a JSON body, as many HTTP clients send them', async () => {
        for (const id of [1, 2, 3]) await create(`{"id":${id},"name":"n"}`);
        const empty = await request(`${plants}/1`, {
          method: 'DELETE',
          headers: { 'content-type': 'application/json' },
        });
        expect(empty.status).toBe(204);
        const ignored = await request(`${plants}/2`, { method: 'DELETE', body: '{"reason":"cleanup"}' });
        expect(ignored.status).toBe(204);
        // A body that is not JSON is refused as on any route (declared: 415).
        const text = await request(`${plants}/3`, {
          method: 'DELETE',
          body: 'please',
          headers: { 'content-type': 'text/plain' },
        });
        expect(text.body).toEqual({ error: 415, message: 'Content-Type must be application/json' });
        expect((await get(`${plants}/3`)).status).toBe(200);
      });

      it('should make a create after a delete a new create, with nothing of the old plant left', async () => {
        expect((await create('{"id":77,"name":"Old","tag":"gone"}')).status).toBe(200);
        expect((await request(`${plants}/77`, { method: 'DELETE' })).status).toBe(204);
        const renewed = await create('{"id":77,"name":"New"}');
        expect(renewed.status).toBe(200);
        expect(renewed.body).toEqual({ name: 'New' });
        // The old content is neither a replay nor kept: it now conflicts with the new plant.
        expect((await create('{"id":77,"name":"Old","tag":"gone"}')).status).toBe(409);
        expect((await get(`${plants}/77`)).text).toBe('{"id":77,"name":"New"}');
      });
    });

    describe('when creates and deletes of the same ids race', () => {
      it('should answer each with 200/409/204/404 consistently with some order, never 5xx', async () => {
        const rounds = Array.from({ length: 60 }, (_, i) => 2n ** 62n + BigInt(i));
        const outcomes = await Promise.all(rounds.map((id) => settleRace(() => server.url, id, CREATE_DELETE_RACE)));
        expectSettledInSomeOrder(outcomes);
      });
    });
  });

  // One service for these: they are refused, or write ids no other test of the group writes.
  describe('on one store', () => {
    beforeAll(boot);
    afterAll(stop);

    // The page parameters' 400s, DELETE's path ids and 401s: the create-once contract (plants.e2e-spec.ts).
    describe('ids written with an exponent or a fraction in a body', () => {
      it.each([
        ['9.007199254740991e15', '9007199254740991'],
        ['9.007199254740992e15', '9007199254740992'],
        ['9.007199254740993e15', '9007199254740993'],
        ['9007199254740993.0', '9007199254740993'],
        ['1e16', '10000000000000000'],
        ['1e18', '1000000000000000000'],
        ['9.223372036854775807e18', MAX],
        ['-9.223372036854775808e18', MIN],
        ['-0', '0'],
        ['1.5e1', '15'],
      ])('should store %s as exactly %s', async (literal, exact) => {
        const res = await create(`{"id":${literal},"name":"exp"}`);
        expect(res.status).toBe(200);
        expect((await get(`${plants}/${exact}`)).text).toBe(`{"id":${exact},"name":"exp"}`);
        // The same id in plain digits is the same plant: a replay.
        expect((await create(`{"id":${exact},"name":"exp"}`)).status).toBe(200);
        expect((await create(`{"id":${exact},"name":"other"}`)).status).toBe(409);
      });

      it.each(['9.223372036854775808e18', '1e19', '1e300', '1.5', '1e-1', '9007199254740993.5'])(
        'should answer 400 for %s, which is no int64',
        async (literal) => {
          const res = await create(`{"id":${literal},"name":"exp"}`);
          expect(res.body).toEqual({ error: 400, message: 'id must be an integer in the int64 range' });
        },
      );
    });
  });
});

// Nest's own ValidationPipe instead of the compiled rules (src/validation/README.md): the page
// parameters get the same answers. The store plays no part in validation, so the SQLite file alone.
describe('GET /plants with VALIDATION_PIPE=stock (e2e on SQLite)', () => {
  let server: TestApp;
  let plants: string;

  beforeAll(async () => {
    server = await createTestApp({ VALIDATION_PIPE: 'stock' });
    plants = `${server.url}/plants`;
  });
  afterAll(() => server.destroy());

  it.each(BAD_PAGE_QUERIES)('should answer 400 naming the parameter for ?%s', async (query, message) => {
    const res = await get(`${plants}?${query}`);
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ error: 400, message });
  });

  it('should accept the bounds of limit and after, and page with Link', async () => {
    for (const id of [MIN, '7', MAX]) await request(plants, { body: `{"id":${id},"name":"p${id}"}` });
    const first = await get(`${plants}?limit=2&after=${MIN}`);
    expect(first.text).toBe(`[{"id":7,"name":"p7"},{"id":${MAX},"name":"p${MAX}"}]`);
    expect(first.headers.get('link')).toBeNull();
    const page = await get(`${plants}?limit=1`);
    expect(page.text).toBe(`[{"id":${MIN},"name":"p${MIN}"}]`);
    expect(page.headers.get('link')).toBe(`</plants?limit=1&after=${MIN}>; rel="next"`);
    expect((await get(`${plants}?limit=1000&after=${MAX}`)).text).toBe('[]');
  });
});
