import { readFileSync } from 'node:fs';
import { Server } from 'node:http';
import { join } from 'node:path';
import { createReceiver, Mirror } from '../../docs/examples/webhook-receiver';
import { eventually } from '../support/eventually';
import { request } from '../support/http';
import { describeOnEachStore } from '../support/postgres';
import { useSubscribersApp } from '../support/subscribers-app';
import { TEST_TOKEN } from '../support/test-app';
import { makeSecret } from '../support/webhook-receiver';

const ROOT = join(__dirname, '..', '..');

describe('the receiver of docs/clients.md', () => {
  it('should be docs/examples/webhook-receiver.ts, verbatim', () => {
    const guide = readFileSync(join(ROOT, 'docs', 'clients.md'), 'utf8');
    const blocks = [...guide.matchAll(/^```ts\n([\s\S]*?)^```$/gm)].map(([, code]) => code);
    expect(blocks).toContain(readFileSync(join(ROOT, 'docs', 'examples', 'webhook-receiver.ts'), 'utf8'));
  });
});

describeOnEachStore('the receiver of docs/clients.md, subscribed to a real service (e2e on %s)', (postgres) => {
  const { url, admin, settled } = useSubscribersApp(postgres, () => []);
  let receiver: Server | undefined;
  afterEach(async () => {
    jest.restoreAllMocks();
    receiver?.closeAllConnections();
    await new Promise((resolve) => (receiver ? receiver.close(resolve) : resolve(undefined)));
  });

  it('should verify each body, bare plant.created and the envelope, handle each event once, and mirror the store', async () => {
    const mirror: Mirror = { plants: new Map(), handled: new Set(), tested: [] };
    const secret = makeSecret();
    receiver = createReceiver({ secret, storeUrl: url(), token: TEST_TOKEN, mirror });
    await new Promise<void>((resolve) => receiver!.listen(0, '127.0.0.1', resolve));
    const { port } = receiver.address() as { port: number };
    const created = await admin('/webhooks/endpoints', {
      method: 'POST',
      body: { url: `http://127.0.0.1:${port}/hooks`, eventTypes: ['plant.created', 'plant.deleted'] },
    });
    expect(created.status).toBe(201);
    const { id: endpointId } = created.body as { id: string };
    // The receiver's own secret, as an operator gives one.
    expect(
      (await admin(`/webhooks/endpoints/${endpointId}/secret/rotate`, { method: 'POST', body: { secret } })).status,
    ).toBe(200);

    // The test send, before any plant.
    expect((await admin(`/webhooks/endpoints/${endpointId}/test`, { method: 'POST' })).status).toBe(202);
    await eventually(() => mirror.tested.length === 1);
    expect(mirror.tested).toEqual([endpointId]);
    expect(mirror.plants.size).toBe(0);

    // A create, a delete, and an id created, deleted and created again: whatever order they arrive in,
    // each event re-reads the plant, so the mirror ends as the store is.
    const plants = (body: string) => request(`${url()}/plants`, { body });
    const remove = (id: string) => request(`${url()}/plants/${id}`, { method: 'DELETE' });
    expect((await plants('{"id":9007199254740993,"name":"Fern","tag":"shade"}')).status).toBe(200);
    expect((await plants('{"id":2,"name":"Moss"}')).status).toBe(200);
    expect((await remove('2')).status).toBe(204);
    expect((await plants('{"id":3,"name":"Aloe"}')).status).toBe(200);
    expect((await remove('3')).status).toBe(204);
    expect((await plants('{"id":3,"name":"Aloe again"}')).status).toBe(200);
    const log = await settled(endpointId);
    expect(log.map((delivery) => [delivery.eventType, delivery.status])).toEqual([
      ['plant.created', 'succeeded'],
      ['plant.deleted', 'succeeded'],
      ['plant.created', 'succeeded'],
      ['plant.deleted', 'succeeded'],
      ['plant.created', 'succeeded'],
      ['plant.created', 'succeeded'],
      ['webhook.test', 'succeeded'],
    ]);
    expect(mirror.handled.size).toBe(7);
    expect(mirror.plants).toEqual(
      new Map([
        [9007199254740993n, { id: 9007199254740993n, name: 'Fern', tag: 'shade' }],
        [3n, { id: 3n, name: 'Aloe again' }],
      ]),
    );

    const logged = log as unknown as { id: string; eventType: string; payload: { name?: string } }[];
    const createdOf = (name: string) =>
      logged.find((delivery) => delivery.eventType === 'plant.created' && delivery.payload.name === name)!.id;
    /** Sends a delivery again and resolves once the receiver has answered it. */
    const resend = async (webhookId: string) => {
      const answer = await admin(`/webhooks/endpoints/${endpointId}/deliveries/${webhookId}/resend`, {
        method: 'POST',
      });
      expect(answer.status).toBe(202);
      const after = (await settled(endpointId)) as unknown as { id: string }[];
      expect(after.find(({ id }) => id === webhookId)).toMatchObject({ status: 'succeeded', attempts: 2 });
    };
    const expected = new Map(mirror.plants);

    // The same event again (a resend: the same webhook-id) is answered, and not handled twice.
    const reads = jest.spyOn(globalThis, 'fetch');
    await resend(createdOf('Fern'));
    expect(reads.mock.calls.map(([target]) => target)).not.toContain(`${url()}/plants/9007199254740993`);

    // An old event arriving late, once its webhook-id is forgotten (a resend after the dedupe window):
    // re-read, it brings back no plant deleted since.
    mirror.handled.clear();
    await resend(createdOf('Moss'));
    expect(mirror.plants).toEqual(expected);
    // It was handled again, not skipped: the receiver read the plant.
    expect(reads.mock.calls.map(([target]) => target)).toContain(`${url()}/plants/2`);

    // A body it cannot verify is refused, and changes nothing.
    const forged = await request(`http://127.0.0.1:${port}/hooks`, {
      auth: false,
      headers: {
        'webhook-id': 'msg_forged',
        'webhook-timestamp': `${Math.floor(Date.now() / 1000)}`,
        'webhook-signature': 'v1,AAAA',
      },
      body: '{"id":4,"name":"Phantom"}',
    });
    expect(forged.status).toBe(401);
    expect([...mirror.plants.keys()].sort()).toEqual([3n, 9007199254740993n]);
  });
});
