import { eventData } from '../events/event-data';
import { documented, eventWebhook } from './event.webhook';

describe('eventWebhook', () => {
  class ThingDto {}
  const thing = (id: bigint) =>
    documented({
      name: 'thing.created',
      data: eventData,
      webhook: { name: 'newThing', summary: 'A thing', description: 'Test.', data: ThingDto, example: { id } },
    });

  it('should show the example in the envelope, as sent, for a type that is not bare', () => {
    const { post } = eventWebhook(thing(9007199254740991n));
    expect(post!.requestBody).toMatchObject({
      content: {
        'application/json': {
          example: { type: 'thing.created', timestamp: '2026-11-29T07:11:32.123Z', data: { id: 9007199254740991 } },
        },
      },
    });
  });

  it('should refuse an example that a tool reading the document would round: an id beyond 2^53', () => {
    expect(() => eventWebhook(thing(9007199254740993n))).toThrow(
      'The example of thing.created changes when read as JSON: keep its ids within 2^53',
    );
  });
});
