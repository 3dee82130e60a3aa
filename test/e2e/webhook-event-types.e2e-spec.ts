import { Controller, DynamicModule, HttpCode, Inject, Module, Param, Post } from '@nestjs/common';
import { ApiProperty, ApiSchema } from '@nestjs/swagger';
import { Database } from '../../src/database/database';
import { EventType } from '../../src/events/event-type';
import { Events } from '../../src/events/events';
import { publishes } from '../../src/events/publishes';
import { envelopeOf } from '../support/envelope';
import { request } from '../support/http';
import { describeOnEachStore } from '../support/postgres';
import { ADMIN, useSubscribersApp } from '../support/subscribers-app';
import { LOOPBACK_NETWORKS } from '../support/webhook-receiver';

// A tiny feature of this test only, publishing a second event type as a generated resource would.
interface Thing {
  id: bigint;
  label: string;
}

@ApiSchema({ name: 'TestThing' })
class ThingDto {
  @ApiProperty({ type: 'integer', format: 'int64' })
  id!: bigint;
  label!: string;
}

abstract class ThingCreated extends Events<Thing> {}

const THING_CREATED: EventType<Thing> = {
  name: 'thing.created',
  port: ThingCreated,
  data: (thing) => `{"id":${thing.id},"label":${JSON.stringify(thing.label)}}`,
  webhook: {
    name: 'newThing',
    summary: 'A thing was made',
    description: 'Test only.',
    data: ThingDto,
    example: { id: 1n, label: 'thing 1' },
  },
};

/** Commits a thing's event as any write does: published in the transaction, the same call on either store. */
@Controller('things')
class ThingsController {
  constructor(
    private readonly database: Database,
    @Inject(ThingCreated) private readonly created: ThingCreated,
  ) {}

  @Post(':id')
  @HttpCode(204)
  async make(@Param('id') id: string): Promise<void> {
    const thing = { id: BigInt(id), label: `thing ${id} "🌿"` };
    await this.database.transaction('make a thing', (tx) => this.created.publish(tx, [thing]));
  }
}

@Module({})
class ThingsModule {
  static register(events: NonNullable<DynamicModule['imports']>[number]): DynamicModule {
    return {
      module: ThingsModule,
      imports: [events],
      controllers: [ThingsController],
      // The one line that publishes the thing's events.
      providers: [publishes(THING_CREATED)],
    };
  }
}

describeOnEachStore('webhook event types (e2e on %s, receivers on 127.0.0.1)', (postgres) => {
  const { url, admin, subscribe, restart } = useSubscribersApp(postgres, (webhooks) => [
    ThingsModule.register(webhooks),
  ]);

  it('should send each endpoint the event types it subscribes to, plant.created when it names none', async () => {
    const plain = await subscribe();
    const things = await subscribe({ eventTypes: ['thing.created'] });
    const both = await subscribe({ eventTypes: ['thing.created', 'plant.created'] });
    expect([plain, things, both].map(({ endpoint }) => endpoint.eventTypes)).toEqual([
      ['plant.created'],
      ['thing.created'],
      ['thing.created', 'plant.created'],
    ]);

    expect((await request(`${url()}/plants`, { body: '{"id":9007199254740993,"name":"Fern"}' })).status).toBe(200);
    expect((await request(`${url()}/things/9223372036854775807`)).status).toBe(204);

    await both.receiver.waitFor(() => both.receiver.accepted().length === 2);
    await plain.receiver.waitFor(() => plain.receiver.accepted().length === 1);
    await things.receiver.waitFor(() => things.receiver.accepted().length === 1);
    const plantBody = '{"id":9007199254740993,"name":"Fern"}';
    const thingData = '{"id":9223372036854775807,"label":"thing 9223372036854775807 \\"🌿\\""}';
    // plant.created bare, as the sample's webhook; thing.created in the envelope, its type inside the signed body.
    const received = (receiver: typeof plain.receiver) =>
      receiver.received.map(({ body }) => {
        const envelope = envelopeOf(body);
        return envelope === undefined ? body : [envelope.type, envelope.data];
      });
    expect(received(plain.receiver)).toEqual([plantBody]);
    expect(received(things.receiver)).toEqual([['thing.created', thingData]]);
    expect(received(both.receiver)).toEqual(expect.arrayContaining([plantBody, ['thing.created', thingData]]));
    for (const { receiver } of [plain, things, both]) {
      expect(receiver.received.every((delivery) => delivery.verifiedBy.length === 1)).toBe(true);
    }

    // The delivery log says which event type each delivery is, with its body exactly as sent.
    const log = await admin(`/webhooks/endpoints/${things.endpoint.id}/deliveries`);
    expect(log.status).toBe(200);
    expect(log.text).toContain(`"eventType":"thing.created","payload":${things.receiver.received[0].body}`);
  });

  it('should change what an endpoint subscribes to, and refuse event types it does not know with a 400', async () => {
    const { receiver, endpoint } = await subscribe();
    const patched = await admin(`/webhooks/endpoints/${endpoint.id}`, {
      method: 'PATCH',
      body: { eventTypes: ['thing.created'] },
    });
    expect(patched.status).toBe(200);
    expect((patched.body as { eventTypes: string[] }).eventTypes).toEqual(['thing.created']);
    expect((await admin(`/webhooks/endpoints/${endpoint.id}`)).body).toMatchObject({ eventTypes: ['thing.created'] });

    expect((await request(`${url()}/plants`, { body: '{"id":1,"name":"Fern"}' })).status).toBe(200);
    expect((await request(`${url()}/things/2`)).status).toBe(204);
    await receiver.waitFor(() => receiver.accepted().length === 1);
    expect(receiver.received.map((delivery) => envelopeOf(delivery.body)?.data)).toEqual([
      '{"id":2,"label":"thing 2 \\"🌿\\""}',
    ]);

    const other = 'http://127.0.0.1:9/other';
    const cases: [unknown, string][] = [
      ['plant.created', 'eventTypes must be an array of 1 to 20 event type names'],
      [[], 'eventTypes must be an array of 1 to 20 event type names'],
      [Array.from({ length: 21 }, (_, i) => `t${i}`), 'eventTypes must be an array of 1 to 20 event type names'],
      [[1], 'eventTypes must hold strings of 1 to 100 characters, each once'],
      [[''], 'eventTypes must hold strings of 1 to 100 characters, each once'],
      [['x'.repeat(101)], 'eventTypes must hold strings of 1 to 100 characters, each once'],
      [['plant.created', 'plant.created'], 'eventTypes must hold strings of 1 to 100 characters, each once'],
      [
        ['plant.created', 'plant.updated'],
        'eventTypes holds "plant.updated", which is not an event type of this service (plant.created, plant.deleted, thing.created)',
      ],
    ];
    for (const [eventTypes, message] of cases) {
      for (const [path, method, body] of [
        ['/webhooks/endpoints', 'POST', { url: other, eventTypes }],
        [`/webhooks/endpoints/${endpoint.id}`, 'PATCH', { eventTypes }],
      ] as const) {
        const answer = await admin(path, { method, body });
        expect({ eventTypes, method, status: answer.status, body: answer.body }).toEqual({
          eventTypes,
          method,
          status: 400,
          body: { error: 400, message },
        });
      }
    }
    // Nothing was stored by the refused creates.
    expect(((await admin('/webhooks/endpoints')).body as unknown[]).length).toBe(1);
  });

  it('should keep the event types of a config endpoint (plant.created) the configuration’s: 409 on a change', async () => {
    await restart({
      ADMIN_TOKENS: ADMIN,
      WEBHOOK_ALLOWED_NETWORKS: LOOPBACK_NETWORKS,
      WEBHOOK_URLS: 'http://127.0.0.1:9/configured',
      WEBHOOK_SECRET: `whsec_${Buffer.alloc(32, 1).toString('base64')}`,
    });
    const [configured] = (await admin('/webhooks/endpoints')).body as { id: string; eventTypes: string[] }[];
    expect(configured.eventTypes).toEqual(['plant.created']);
    const answer = await admin(`/webhooks/endpoints/${configured.id}`, {
      method: 'PATCH',
      body: { eventTypes: ['plant.created'] },
    });
    expect(answer.status).toBe(409);
    expect((answer.body as { message: string }).message).toContain('WEBHOOK_URLS');
  });
});
