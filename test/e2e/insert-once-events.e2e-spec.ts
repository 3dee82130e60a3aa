import { Body, Controller, DynamicModule, HttpCode, Injectable, Module, Post } from '@nestjs/common';
import { ApiSchema } from '@nestjs/swagger';
import { eventData } from '../../src/events/event-data';
import { EventType } from '../../src/events/event-type';
import { Events } from '../../src/events/events';
import { publishes } from '../../src/events/publishes';
import { Int64Property } from '../../src/common/int64/int64-property.decorator';
import { conflictMessage } from '../../src/common/resources/resource-name';
import { TextProperty } from '../../src/common/text/text-property.decorator';
import { column, ValueOf } from '../../src/database/columns';
import { Database } from '../../src/database/database';
import { InsertOnce } from '../../src/database/insert-once';
import { ResourceConflictError } from '../../src/common/errors/resource-conflict.error';
import { envelopeOf, UTC_MILLISECONDS } from '../support/envelope';
import { request } from '../support/http';
import { describeOnEachStore } from '../support/postgres';
import { useSubscribersApp } from '../support/subscribers-app';

// A resource of this test only, shaped as the generator makes one (its event's port, its EventType,
// a repository on `InsertOnce`, a module registered with the webhooks), with its one line turned
// on: `publishes(SEEDLING_CREATED)`. It stores into plants' table, so it needs no migration.
const SEEDLING_COLUMNS = { id: column.int64(), name: column.text() };
type Seedling = ValueOf<typeof SEEDLING_COLUMNS>;

@ApiSchema({ name: 'TestNewSeedling' })
class NewSeedlingDto {
  @Int64Property()
  id!: bigint;
  @TextProperty({ max: 200 })
  name!: string;
}

abstract class SeedlingCreated extends Events<Seedling> {}

const SEEDLING_CREATED: EventType<Seedling> = {
  name: 'seedling.created',
  port: SeedlingCreated,
  data: eventData,
  webhook: {
    name: 'newSeedling',
    summary: 'A seedling was created',
    description: 'Test only.',
    data: NewSeedlingDto,
    example: { id: 1n, name: 'Seedling' },
  },
};

@Injectable()
class SeedlingsRepository {
  private readonly seedlings: InsertOnce<typeof SEEDLING_COLUMNS>;

  constructor(database: Database, created: SeedlingCreated) {
    this.seedlings = new InsertOnce(database, {
      what: 'a seedling',
      table: 'plants',
      columns: SEEDLING_COLUMNS,
      conflict: ({ id }) => new ResourceConflictError(conflictMessage('seedling', id)),
      created,
    });
  }

  create(seedling: Seedling): Promise<{ readonly created: boolean }> {
    return this.seedlings.create(seedling);
  }
}

@Controller('seedlings')
class SeedlingsController {
  constructor(private readonly seedlings: SeedlingsRepository) {}

  @Post()
  @HttpCode(204)
  async create(@Body() seedling: NewSeedlingDto): Promise<void> {
    await this.seedlings.create({ id: seedling.id, name: seedling.name });
  }
}

@Module({})
class SeedlingsModule {
  static register(events: NonNullable<DynamicModule['imports']>[number]): DynamicModule {
    return {
      module: SeedlingsModule,
      imports: [events],
      controllers: [SeedlingsController],
      providers: [SeedlingsRepository, publishes(SEEDLING_CREATED)],
    };
  }
}

describeOnEachStore('events of an InsertOnce resource (e2e on %s, receivers on 127.0.0.1)', (postgres) => {
  const { url, admin, subscribe, settled } = useSubscribersApp(postgres, (webhooks) => [
    SeedlingsModule.register(webhooks),
  ]);
  const seedling = (body: string) => request(`${url()}/seedlings`, { body });

  it('should send one seedling.created per stored seedling to its subscribers, none for a replay or a 409', async () => {
    const seedlings = await subscribe({ eventTypes: ['seedling.created'] });
    const plain = await subscribe();
    expect(plain.endpoint.eventTypes).toEqual(['plant.created']);

    expect((await seedling('{"id":9223372036854775807,"name":"Sprout"}')).status).toBe(204);
    expect((await seedling('{"id":9223372036854775807,"name":"Sprout"}')).status).toBe(204); // a replay
    const conflict = await seedling('{"id":9223372036854775807,"name":"Other"}');
    expect({ status: conflict.status, body: conflict.body }).toEqual({
      status: 409,
      body: { error: 409, message: conflictMessage('seedling', 9223372036854775807n) },
    });
    expect((await seedling('{"id":-9223372036854775808,"name":"Second"}')).status).toBe(204);
    // A plant after them: the default endpoint's only event, and a mark that the outbox has moved on.
    expect((await request(`${url()}/plants`, { body: '{"id":1,"name":"Fern"}' })).status).toBe(200);

    await plain.receiver.waitFor(() => plain.receiver.accepted().length === 1);
    await seedlings.receiver.waitFor(() => seedlings.receiver.accepted().length === 2);
    expect(plain.receiver.received.map((delivery) => delivery.body)).toEqual(['{"id":1,"name":"Fern"}']);
    // In the Standard Webhooks envelope: its type inside the signed body, its data exact.
    const envelopes = seedlings.receiver.received.map((delivery) => envelopeOf(delivery.body)!);
    expect(envelopes.map(({ type, data }) => [type, data]).sort()).toEqual([
      ['seedling.created', '{"id":-9223372036854775808,"name":"Second"}'],
      ['seedling.created', '{"id":9223372036854775807,"name":"Sprout"}'],
    ]);
    for (const { timestamp } of envelopes) expect(timestamp).toMatch(UTC_MILLISECONDS);
    expect(seedlings.receiver.received.every((delivery) => delivery.verifiedBy.length === 1)).toBe(true);
    // The log holds each delivery as it was sent, and no other: nothing more is coming.
    const log = await admin(`/webhooks/endpoints/${seedlings.endpoint.id}/deliveries`);
    for (const delivery of seedlings.receiver.received) {
      expect(log.text).toContain(`"eventType":"seedling.created","payload":${delivery.body}`);
    }
    expect((await settled(seedlings.endpoint.id)).map((delivery) => delivery.status)).toEqual([
      'succeeded',
      'succeeded',
    ]);
    expect((await settled(plain.endpoint.id)).map((delivery) => delivery.status)).toEqual(['succeeded']);
  });

  it('should declare seedling.created: subscribable, and a webhook of the document with its body', async () => {
    const document = await request(`${url()}/docs-json`, { method: 'GET', auth: false });
    const { webhooks } = document.body as {
      webhooks: Record<string, { post: { requestBody: { content: Record<string, { schema: unknown }> } } }>;
    };
    expect(Object.keys(webhooks)).toEqual(['newPlant', 'plantDeleted', 'newSeedling', 'webhookTest']);
    // Its body as on the wire: the envelope, its type a constant, its data the New… model.
    expect(webhooks.newSeedling.post.requestBody.content['application/json'].schema).toMatchObject({
      required: ['type', 'timestamp', 'data'],
      properties: {
        type: { const: 'seedling.created' },
        timestamp: { format: 'date-time' },
        data: { $ref: '#/components/schemas/TestNewSeedling' },
      },
    });
    const refused = await admin('/webhooks/endpoints', {
      method: 'POST',
      body: { url: 'http://127.0.0.1:9/x', eventTypes: ['seedlings.created'] },
    });
    expect(refused.body).toEqual({
      error: 400,
      message:
        'eventTypes holds "seedlings.created", which is not an event type of this service (plant.created, plant.deleted, seedling.created)',
    });
  });

  it('should write no event when no endpoint subscribes to seedling.created', async () => {
    const plain = await subscribe();
    expect((await seedling('{"id":5,"name":"Alone"}')).status).toBe(204);
    expect((await request(`${url()}/plants`, { body: '{"id":6,"name":"Fern"}' })).status).toBe(200);
    await plain.receiver.waitFor(() => plain.receiver.accepted().length === 1);
    const log = await admin(`/webhooks/endpoints/${plain.endpoint.id}/deliveries`);
    expect(log.text).not.toContain('seedling');
  });
});
