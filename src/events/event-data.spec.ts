import { eventData } from './event-data';

describe('eventData', () => {
  it('should write int64 ids as their exact digits, strings escaped, and leave out absent fields', () => {
    expect(eventData({ id: -(2n ** 63n), name: 'Fern "🌿"', tag: undefined })).toBe(
      '{"id":-9223372036854775808,"name":"Fern \\"🌿\\""}',
    );
    expect(eventData({ id: 9007199254740993n, sizes: [2n ** 63n - 1n] })).toBe(
      '{"id":9007199254740993,"sizes":[9223372036854775807]}',
    );
  });
});
