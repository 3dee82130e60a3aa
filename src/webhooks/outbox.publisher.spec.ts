import { Test } from '@nestjs/testing';
import { CreatedEvents } from '../common/events/created-events';
import { EventPublisher, EventType, publishes, publishesNothing } from '../common/events/event-type';
import { NOTHING_ADDED } from '../database/statement-addition';
import { OutboxWriter } from './outbox.writer';
import { OutboxPublisher } from './outbox.publisher';
import { OutboxStore } from './persistence/outbox.store';
import { WebhookDispatcher } from './webhook.dispatcher';

interface Thing {
  id: bigint;
}
abstract class ThingEvents extends CreatedEvents<Thing> {}
class ThingDto {}
const THING_CREATED: EventType<Thing> = {
  name: 'thing.created',
  port: ThingEvents,
  key: (thing) => thing.id,
  payload: (thing) => `{"id":${thing.id}}`,
  webhook: { name: 'newThing', summary: 'A thing', description: 'Test.', body: ThingDto },
};

describe('OutboxPublisher', () => {
  const publisher = () => new OutboxPublisher({} as OutboxStore, {} as WebhookDispatcher);

  it('should bind a port with publishes(…) to an outbox writer, and declare its type', async () => {
    const outbox = publisher();
    const moduleRef = await Test.createTestingModule({
      providers: [{ provide: EventPublisher, useValue: outbox }, publishes(THING_CREATED)],
    }).compile();
    expect(moduleRef.get(ThingEvents)).toBeInstanceOf(OutboxWriter);
    expect(outbox.names()).toEqual(['thing.created']);
    expect(outbox.declared()).toEqual([THING_CREATED]);
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
  it('should bind a port that adds nothing to the rows’ write', async () => {
    const moduleRef = await Test.createTestingModule({ providers: [publishesNothing(ThingEvents)] }).compile();
    const events = moduleRef.get(ThingEvents);
    expect(events.created({} as never, [{ id: 1n }])).toBeUndefined();
    expect(events.createdInStatement({} as never, [{ id: 1n }])).toBe(NOTHING_ADDED);
  });
});
