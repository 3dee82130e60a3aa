import { WindowCounter } from './window-counter';

describe('WindowCounter', () => {
  let clock: number;
  const counter = (capacity?: number) => new WindowCounter(capacity, () => clock);
  beforeEach(() => (clock = 1000));

  it('should pass `limit` hits of a key in its window, refuse the next ones, and start again when it ends', () => {
    const windows = counter();
    expect(windows.hit('a', 60_000, 2)).toEqual({ limited: false, hits: 1, resetInMs: 60_000 });
    clock += 30_000;
    expect(windows.hit('a', 60_000, 2)).toEqual({ limited: false, hits: 2, resetInMs: 30_000 });
    expect(windows.hit('b', 60_000, 2)).toEqual({ limited: false, hits: 1, resetInMs: 60_000 });
    expect(windows.hit('a', 60_000, 2)).toEqual({ limited: true, hits: 3, resetInMs: 30_000 });
    clock += 29_000;
    expect(windows.hit('a', 60_000, 2)).toEqual({ limited: true, hits: 3, resetInMs: 1000 });
    clock += 1000;
    expect(windows.hit('a', 60_000, 2)).toEqual({ limited: false, hits: 1, resetInMs: 60_000 });
  });

  describe('when full', () => {
    it('should give a new key the place of the oldest key below its limit, whose count starts again', () => {
      const windows = counter(2);
      windows.hit('a', 60_000, 1);
      windows.hit('b', 60_000, 1);
      windows.hit('c', 60_000, 1); // takes a's place
      expect(windows.size).toBe(2);
      expect(windows.hit('a', 60_000, 1).limited).toBe(false);
      expect(windows.hit('c', 60_000, 1).limited).toBe(true);
    });

    it('should keep a key past its limit limited until its window ends, however many keys come after it', () => {
      const windows = counter(2);
      windows.hit('limited', 60_000, 1);
      expect(windows.hit('limited', 60_000, 1).limited).toBe(true);
      for (let index = 0; index < 100; index++) windows.hit(`new-${index}`, 60_000, 1);
      clock += 59_999;
      expect(windows.hit('limited', 60_000, 1)).toEqual({ limited: true, hits: 2, resetInMs: 1 });
      clock += 1;
      expect(windows.hit('limited', 60_000, 1)).toEqual({ limited: false, hits: 1, resetInMs: 60_000 });
      expect(windows.size).toBeLessThanOrEqual(4);
    });

    it('should free the place of a limited key whose window has ended for the next key past its limit', () => {
      const windows = counter(1);
      windows.hit('a', 10, 0); // a is limited until 1010
      clock += 10;
      expect(windows.hit('b', 10, 0)).toEqual({ limited: true, hits: 1, resetInMs: 10 }); // takes a's place
      expect(windows.hit('new', 10, 0)).toEqual({ limited: true, hits: 1, resetInMs: 10 }); // no place: see below
      clock += 10;
      expect(windows.hit('a', 10, 1)).toEqual({ limited: false, hits: 1, resetInMs: 10 });
    });

    it('should count every key it does not hold as limited while it cannot hold a key past its limit, until that key’s window ends', () => {
      const windows = counter(2);
      windows.hit('first', 60_000, 0); // the limited table full until 61,000
      windows.hit('first-too', 60_000, 0);
      clock += 10_000;
      windows.hit('held', 60_000, 5); // counted, below its limit
      clock += 10_000;
      expect(windows.hit('second', 60_000, 0)).toEqual({ limited: true, hits: 1, resetInMs: 60_000 }); // not held: until 81,000
      expect(windows.hit('stranger', 60_000, 5)).toEqual({ limited: true, hits: 6, resetInMs: 60_000 });
      expect(windows.hit('held', 60_000, 5)).toEqual({ limited: false, hits: 2, resetInMs: 50_000 });
      expect(windows.size).toBe(3);
      clock += 59_999;
      expect(windows.hit('second', 60_000, 0)).toEqual({ limited: true, hits: 1, resetInMs: 1 });
      clock += 1;
      expect(windows.hit('stranger', 60_000, 5)).toEqual({ limited: false, hits: 1, resetInMs: 60_000 });
    });
  });
});
