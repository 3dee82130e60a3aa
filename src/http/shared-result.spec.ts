import { SharedResult } from './shared-result';

describe('SharedResult', () => {
  let clock: number;
  let calls: number;
  let outcome: () => Promise<string>;
  let shared: SharedResult<string>;
  beforeEach(() => {
    clock = 0;
    calls = 0;
    outcome = () => Promise.resolve('up');
    shared = new SharedResult(
      () => {
        calls++;
        return outcome();
      },
      1000,
      () => clock,
    );
  });

  it('should share one call in flight among every caller', async () => {
    let finish!: (value: string) => void;
    outcome = () => new Promise((resolve) => (finish = resolve));
    const answers = Promise.all([shared.get(), shared.get(), shared.get()]);
    finish('up');
    await expect(answers).resolves.toEqual(['up', 'up', 'up']);
    expect(calls).toBe(1);
  });

  it('should reuse the outcome until the time to live has passed since it settled, then call again', async () => {
    await shared.get();
    clock = 999;
    await shared.get();
    expect(calls).toBe(1);
    clock = 1000;
    await shared.get();
    expect(calls).toBe(2);
  });

  it('should share a failure the same way', async () => {
    outcome = () => Promise.reject(new Error('down'));
    await expect(shared.get()).rejects.toThrow('down');
    await expect(shared.get()).rejects.toThrow('down');
    expect(calls).toBe(1);
    outcome = () => Promise.resolve('up again');
    clock = 1000;
    await expect(shared.get()).resolves.toBe('up again');
  });
});
