import { CircuitBreaker } from './circuit-breaker';

describe('CircuitBreaker', () => {
  beforeEach(() => jest.useFakeTimers());
  afterEach(() => jest.useRealTimers());

  const make = (probe: jest.Mock) => {
    const changes: boolean[] = [];
    const breaker = new CircuitBreaker({ coolDownMs: 1000, probe, onChange: (closed) => changes.push(closed) });
    return { breaker, changes };
  };

  it('should let calls through until it is tripped', () => {
    const { breaker, changes } = make(jest.fn());
    expect(breaker.closed).toBe(true);
    breaker.trip();
    expect(breaker.closed).toBe(false);
    expect(changes).toEqual([false]);
  });

  it('should probe once per cool-down, not per call, and close on the first probe that succeeds', async () => {
    const probe = jest.fn().mockRejectedValueOnce(new Error('still hung')).mockResolvedValueOnce('PONG');
    const { breaker, changes } = make(probe);
    breaker.trip();
    breaker.trip();
    await jest.advanceTimersByTimeAsync(999);
    expect(probe).not.toHaveBeenCalled();
    await jest.advanceTimersByTimeAsync(1);
    expect(probe).toHaveBeenCalledTimes(1);
    expect(breaker.closed).toBe(false);
    await jest.advanceTimersByTimeAsync(1000);
    expect(probe).toHaveBeenCalledTimes(2);
    expect(breaker.closed).toBe(true);
    expect(changes).toEqual([false, true]);
    await jest.advanceTimersByTimeAsync(5000);
    expect(probe).toHaveBeenCalledTimes(2);
  });

  it('should not probe again when stopped while a probe was in flight', async () => {
    let fail!: (error: Error) => void;
    const probe = jest.fn().mockImplementation(() => new Promise((_resolve, reject) => (fail = reject)));
    const { breaker } = make(probe);
    breaker.trip();
    await jest.advanceTimersByTimeAsync(1000);
    expect(probe).toHaveBeenCalledTimes(1);
    breaker.stop();
    fail(new Error('closed at shutdown'));
    await jest.advanceTimersByTimeAsync(10_000);
    expect(probe).toHaveBeenCalledTimes(1);
  });

  it('should stop probing when stopped', async () => {
    const probe = jest.fn().mockRejectedValue(new Error('down'));
    const { breaker } = make(probe);
    breaker.trip();
    breaker.stop();
    await jest.advanceTimersByTimeAsync(10_000);
    expect(probe).not.toHaveBeenCalled();
  });
});
