import { newPlantPayload } from './new-plant.payload';

describe('newPlantPayload', () => {
  it.each([
    [{ id: 2n ** 63n - 1n, name: 'max' }, '{"id":9223372036854775807,"name":"max"}'],
    [{ id: -(2n ** 63n), name: 'min', tag: 't' }, '{"id":-9223372036854775808,"name":"min","tag":"t"}'],
    [{ id: 9007199254740993n, name: 'Fern "quoted" 🌿\n' }, '{"id":9007199254740993,"name":"Fern \\"quoted\\" 🌿\\n"}'],
  ])('should write %o exactly as %s', (plant, json) => {
    expect(newPlantPayload(plant)).toBe(json);
  });

  it('should be JSON whose id is exactly the plant id', () => {
    const text = newPlantPayload({ id: 12345678901234567n, name: 'x', tag: 'y' });
    expect(JSON.parse(text.replace(/"id":(-?\d+)/, '"id":"$1"'))).toEqual({
      id: '12345678901234567',
      name: 'x',
      tag: 'y',
    });
  });
});
