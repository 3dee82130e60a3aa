import { Webhook } from 'standardwebhooks';
import { envelopeOf, UTC_MILLISECONDS } from '../support/envelope';
import { request } from '../support/http';
import { describeOnEachStore } from '../support/postgres';
import { Subscriber, useSubscribersApp } from '../support/subscribers-app';
import { ReceivedDelivery } from '../support/webhook-receiver';

/** Plant `i` of the test's 50: both ends of int64 and 2^53's neighbours among them, every third one tagged. */
function plant(i: number): { id: bigint; body: string } {
  const ids = [-(2n ** 63n), 2n ** 63n - 1n, 2n ** 53n + 1n, -(2n ** 53n) - 1n];
  const id = i < ids.length ? ids[i] : BigInt(i * 1000 - 20_000);
  const tag = i % 3 === 0 ? `,"tag":"tag ${i}"` : '';
  return { id, body: `{"id":${id},"name":"plant \\"${i}\\" 🌿"${tag}}` };
}

/** Verifies `delivery` with the `standardwebhooks` library and the endpoint's secret (throws if it does not). */
function verified(subscriber: Subscriber, delivery: ReceivedDelivery): ReceivedDelivery {
  new Webhook(subscriber.endpoint.secret).verify(delivery.body, {
    'webhook-id': delivery.webhookId,
    'webhook-timestamp': delivery.timestamp,
    'webhook-signature': delivery.signature,
  });
  return delivery;
}

/** Each event a subscriber accepted, once per webhook-id: a bare body as it is, an envelope as `[type, data]`. */
function events(subscriber: Subscriber): (string | [string, string])[] {
  const byId = new Map(subscriber.receiver.accepted().map((delivery) => [delivery.webhookId, delivery]));
  return [...byId.values()].map((delivery) => {
    const envelope = envelopeOf(verified(subscriber, delivery).body);
    return envelope === undefined ? delivery.body : [envelope.type, envelope.data];
  });
}

const sorted = <T>(items: T[]) => [...items].sort((a, b) => JSON.stringify(a).localeCompare(JSON.stringify(b)));

describeOnEachStore('plant events (e2e on %s, receivers on 127.0.0.1)', (postgres) => {
  const { url, subscribe, settled } = useSubscribersApp(postgres, () => []);
  const create = (body: string) => request(`${url()}/plants`, { body });
  const remove = (id: bigint) => request(`${url()}/plants/${id}`, { method: 'DELETE' });

  it('should send plant.created bare and plant.deleted in a signed envelope to its subscribers, and the default endpoint the creates alone', async () => {
    const both = await subscribe({ eventTypes: ['plant.created', 'plant.deleted'] });
    const plain = await subscribe();
    expect(plain.endpoint.eventTypes).toEqual(['plant.created']);

    const plants = Array.from({ length: 50 }, (_, i) => plant(i));
    // Ten at a time: several creates and deletes share a group commit.
    for (let i = 0; i < 50; i += 10) {
      const answers = await Promise.all(plants.slice(i, i + 10).map((p) => create(p.body)));
      expect(answers.map((answer) => answer.status)).toEqual(Array(10).fill(200));
    }
    const deleted = plants.slice(0, 30);
    for (let i = 0; i < 30; i += 10) {
      const answers = await Promise.all(deleted.slice(i, i + 10).map((p) => remove(p.id)));
      expect(answers.map((answer) => [answer.status, answer.text])).toEqual(Array(10).fill([204, '']));
    }
    const unknown = [1n, 2n, 3n, 4n, 5n];
    for (const answer of await Promise.all(unknown.map(remove))) {
      expect(answer.status).toBe(404);
      expect(answer.body).toMatchObject({ error: 404 });
    }

    await both.receiver.waitFor(() => both.receiver.ids().size >= 80, 30000);
    await plain.receiver.waitFor(() => plain.receiver.ids().size >= 50, 30000);
    const created = plants.map((p) => p.body);
    const deletedEvents = deleted.map((p): [string, string] => ['plant.deleted', p.body]);
    expect(sorted(events(both))).toEqual(sorted([...created, ...deletedEvents]));
    expect(sorted(events(plain))).toEqual(sorted(created));

    // Every delivery settled and succeeded, the ones above and no other: nothing more is coming.
    const bothLog = await settled(both.endpoint.id);
    expect(bothLog).toHaveLength(80);
    expect(bothLog.every((delivery) => delivery.status === 'succeeded')).toBe(true);
    const plainLog = await settled(plain.endpoint.id);
    expect(plainLog.map((delivery) => [delivery.eventType, delivery.status])).toEqual(
      Array(50).fill(['plant.created', 'succeeded']),
    );
    expect(both.receiver.ids().size).toBe(80);
    expect(plain.receiver.ids().size).toBe(50);

    // An envelope's timestamp: RFC 3339 in UTC with ms, the delivery's createdAt, the same on every attempt.
    const createdAt = new Map(bothLog.map((delivery) => [delivery.id, delivery.createdAt]));
    for (const delivery of both.receiver.accepted()) {
      const envelope = envelopeOf(delivery.body);
      if (envelope === undefined) continue;
      expect(envelope.timestamp).toMatch(UTC_MILLISECONDS);
      expect(envelope.timestamp).toBe(createdAt.get(delivery.webhookId));
    }
  });

  it('should make create, delete and create of one id three events, and concurrent deletes of one id one 204 and one event', async () => {
    const both = await subscribe({ eventTypes: ['plant.created', 'plant.deleted'] });
    const first = '{"id":9223372036854775807,"name":"Fern","tag":"shade"}';
    const second = '{"id":9223372036854775807,"name":"Moss"}';
    expect((await create(first)).status).toBe(200);
    expect((await remove(2n ** 63n - 1n)).status).toBe(204);
    expect((await create(second)).status).toBe(200);
    const statuses = await Promise.all(Array.from({ length: 10 }, () => remove(2n ** 63n - 1n)));
    expect(statuses.map((answer) => answer.status).sort()).toEqual([204, ...Array(9).fill(404)]);

    await both.receiver.waitFor(() => both.receiver.ids().size >= 4);
    expect((await settled(both.endpoint.id)).every((delivery) => delivery.status === 'succeeded')).toBe(true);
    expect(sorted(events(both))).toEqual(sorted([first, ['plant.deleted', first], second, ['plant.deleted', second]]));
  });
});
