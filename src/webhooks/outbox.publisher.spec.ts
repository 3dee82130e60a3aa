import { Test } from '@nestjs/testing';
import { Transaction } from '../database/transaction';
import { EventPublisher } from '../events/event-publisher';
import { EventType } from '../events/event-type';
import { Events } from '../events/events';
import { publishes, publishesNothing } from '../events/publishes';
import { documented } from './event.webhook';
import { OutboxWriter } from './outbox.writer';
import { OutboxPublisher } from './outbox.publisher';
import { OutboxStore } from './persistence/outbox.store';
import { WebhookDispatcher } from './webhook.dispatcher';
import { DOCUMENTED_WEBHOOK_TEST } from './webhook-test-event';

interface Thing {
  id: bigint;
}
abstract class ThingCreated extends Events<Thing> {}
class ThingDto {}
const THING_CREATED: EventType<Thing> = {
  name: 'thing.created',
  port: ThingCreated,
  data: (thing) => `{"id":${thing.id}}`,
  webhook: { name: 'newThing', summary: 'A thing', description: 'Test.', data: ThingDto, example: { id: 1n } },
};

describe('OutboxPublisher', () => {
  const publisher = () => new OutboxPublisher({} as OutboxStore, {} as WebhookDispatcher);

  it('should bind a port with publishes(…) to an outbox writer, and declare its type before webhook.test, which none subscribes to', async () => {
    const outbox = publisher();
    const moduleRef = await Test.createTestingModule({
      providers: [{ provide: EventPublisher, useValue: outbox }, publishes(THING_CREATED)],
    }).compile();
    expect(moduleRef.get(ThingCreated)).toBeInstanceOf(OutboxWriter);
    expect(outbox.names()).toEqual(['thing.created']);
    expect(outbox.declared()).toEqual([documented(THING_CREATED), DOCUMENTED_WEBHOOK_TEST]);
    expect(outbox.declared()[0]).toMatchObject({
      exampleData: '{"id":1}',
      recipients: expect.stringContaining('subscribed'),
    });
  });

  it('should refuse an event type bound twice, naming it', () => {
    const outbox = publisher();
    outbox.writerFor(THING_CREATED);
    expect(() => outbox.writerFor(THING_CREATED)).toThrow(
      'The event type thing.created is published twice: bind its port once (publishes(…))',
    );
  });
});

describe('publishesNothing', () => {
  it('should bind a port that writes nothing in the transaction', async () => {
    const moduleRef = await Test.createTestingModule({ providers: [publishesNothing(ThingCreated)] }).compile();
    const tx = { execute: jest.fn(), afterCommit: jest.fn() } as unknown as jest.Mocked<Transaction>;
    await expect(moduleRef.get(ThingCreated).publish(tx, [{ id: 1n }])).resolves.toBeUndefined();
    expect(tx.execute).not.toHaveBeenCalled();
    expect(tx.afterCommit).not.toHaveBeenCalled();
  });
});
