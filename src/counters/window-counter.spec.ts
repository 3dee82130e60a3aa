import { WindowCounter } from './window-counter';

describe('WindowCounter', () => {
  let clock: number;
  const counter = (sweepAbove?: number) => new WindowCounter(sweepAbove, () => clock);
  beforeEach(() => (clock = 1000));

  it('should count hits per key within a window, and start again when it ends', () => {
    const windows = counter();
    expect(windows.hit('a', 60_000)).toEqual({ count: 1, resetInMs: 60_000 });
    clock += 59_000;
    expect(windows.hit('a', 60_000)).toEqual({ count: 2, resetInMs: 1000 });
    expect(windows.hit('b', 60_000)).toEqual({ count: 1, resetInMs: 60_000 });
    clock += 1000;
    expect(windows.hit('a', 60_000)).toEqual({ count: 1, resetInMs: 60_000 });
  });

  it('should forget ended windows once it holds many keys', () => {
    const windows = counter(2);
    windows.hit('a', 10);
    windows.hit('b', 10);
    clock += 10;
    windows.hit('c', 10); // sweeps a and b
    clock += 5;
    expect(windows.hit('c', 10)).toEqual({ count: 2, resetInMs: 5 });
    expect((windows as unknown as { windows: Map<string, unknown> }).windows.size).toBe(1);
  });
});
