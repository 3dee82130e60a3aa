import { request } from '../support/http';
import { createTestSchema, describePostgres, TestSchema } from '../support/postgres';
import { CREATE_DELETE_RACE, expectSettledInSomeOrder, settleRace } from '../support/plants-race';
import { ServiceProcess, startService } from '../support/service-process';
import { TEST_TOKEN } from '../support/test-app';
import { LOOPBACK_NETWORKS } from '../support/webhook-receiver';

const TOKEN = 'instances-token';
const ADMIN = 'instances-admin-token';

describePostgres('two instances over one PostgreSQL (e2e, two node dist/main.js processes)', () => {
  let schema: TestSchema;
  let instances: ServiceProcess[];

  beforeAll(async () => {
    schema = await createTestSchema();
    const env = {
      DATABASE_URL: schema.url,
      AUTH_TOKENS: `${TOKEN},${TEST_TOKEN}`,
      ADMIN_TOKENS: ADMIN,
      WEBHOOK_ALLOWED_NETWORKS: LOOPBACK_NETWORKS,
      DATABASE_POOL_MAX: '5',
    };
    // Started at the same moment: the advisory lock lets exactly one of them migrate.
    instances = await Promise.all([startService(env), startService(env)]);
  });
  afterAll(async () => {
    await Promise.all(instances.map((instance) => instance.stop('SIGTERM')));
    await schema.drop();
  });

  const create = (instance: ServiceProcess, id: bigint, name: string) =>
    request(`${instance.url}/plants`, { body: `{"id":${id},"name":"${name}"}`, auth: `Bearer ${TOKEN}` });

  it('should give each contested id exactly one winner, answer the rest 409, and lose nothing', async () => {
    const ids = Array.from({ length: 40 }, (_, i) => 2n ** 53n + BigInt(i));
    const [one, two] = instances;
    // Per id, content A and content B race through both instances at once.
    const rounds = await Promise.all(
      ids.map(async (id) => {
        const [a1, b2, a2, b1] = await Promise.all([
          create(one, id, 'A'),
          create(two, id, 'B'),
          create(two, id, 'A'),
          create(one, id, 'B'),
        ]);
        return { id, a: [a1.status, a2.status], b: [b1.status, b2.status] };
      }),
    );
    for (const { a, b } of rounds) {
      const aWon = a[0] === 200;
      expect(a).toEqual(aWon ? [200, 200] : [409, 409]);
      expect(b).toEqual(aWon ? [409, 409] : [200, 200]);
    }

    const { rows } = await schema.admin(`SELECT id::text AS id, name FROM ${schema.name}.plants ORDER BY id`);
    expect(rows).toEqual(rounds.map(({ id, a }) => ({ id: id.toString(), name: a[0] === 200 ? 'A' : 'B' })));

    // Identical replays of the winner are 200 on every instance.
    for (const { id, a } of rounds.slice(0, 5)) {
      const winner = a[0] === 200 ? 'A' : 'B';
      expect((await create(one, id, winner)).body).toEqual({ name: winner });
      expect((await create(two, id, winner)).body).toEqual({ name: winner });
    }
  });

  it('should settle creates and deletes of the same ids racing through both instances in some order, never 5xx', async () => {
    const ids = Array.from({ length: 60 }, (_, i) => -(2n ** 62n) - BigInt(i));
    // Alternate instances: operation i goes to instance i % 2.
    const outcomes = await Promise.all(
      ids.map((id) => settleRace((i) => instances[i % 2].url, id, CREATE_DELETE_RACE)),
    );
    expectSettledInSomeOrder(outcomes);
    // What each round left is what PostgreSQL holds, read through the other instance too.
    for (const { id, stored } of outcomes.slice(0, 10)) {
      const res = await request(`${instances[1].url}/plants/${id}`, { method: 'GET' });
      expect(res.status).toBe(stored === undefined ? 404 : 200);
    }
  });

  it('should answer concurrent deletes of one id through both instances with one 204, and commit one plant.deleted', async () => {
    const added = await request(`${instances[0].url}/webhooks/endpoints`, {
      body: { url: 'http://127.0.0.1:9/deleted', eventTypes: ['plant.deleted'] },
      auth: `Bearer ${ADMIN}`,
    });
    expect(added.status).toBe(201);
    const ids = Array.from({ length: 20 }, (_, i) => 2n ** 62n + BigInt(i));
    for (const id of ids) expect((await create(instances[0], id, 'Fern')).status).toBe(200);
    const statuses = await Promise.all(
      ids.map((id) =>
        Promise.all(
          [0, 1, 0, 1].map((i) =>
            request(`${instances[i].url}/plants/${id}`, { method: 'DELETE', auth: `Bearer ${TOKEN}` }),
          ),
        ).then((answers) => answers.map((answer) => answer.status).sort()),
      ),
    );
    expect(statuses).toEqual(ids.map(() => [204, 404, 404, 404]));
    const { rows } = await schema.admin(
      `SELECT m.payload FROM ${schema.name}.webhook_messages m WHERE m.event_type = 'plant.deleted' ORDER BY m.payload`,
    );
    expect(rows).toEqual(
      ids.map((id) => ({ payload: `{"id":${id},"name":"Fern"}` })).sort((a, b) => a.payload.localeCompare(b.payload)),
    );
  });
});
