import { RecoveredBatch } from '../deliveries';
import { DeliveryLog } from '../persistence/delivery-log';
import { recoverInBatches } from './recover-in-batches';

/** A log with `batches` batches to recover (the last one short), recording each batch in `events`. */
function logWith(batches: number, events: string[]): jest.Mocked<DeliveryLog> {
  let done = 0;
  return {
    recoverBatch: jest.fn().mockImplementation((): Promise<RecoveredBatch> => {
      events.push('batch');
      done++;
      const next = { startedAt: '1', createdAt: String(done), seq: String(done) };
      return Promise.resolve(done < batches ? { queued: 10, next } : { queued: 3 });
    }),
  } as unknown as jest.Mocked<DeliveryLog>;
}

describe('recoverInBatches', () => {
  it('should run batches until none is left, handing each the cursor of the one before', async () => {
    const log = logWith(3, []);
    const queued = jest.fn();
    const outcome = await recoverInBatches(
      log,
      'ep_1',
      { sinceMs: 5 },
      { batchSize: 10, stop: new AbortController().signal, queued },
    );
    expect(outcome).toEqual({ queued: 23, stopped: false });
    expect(log.recoverBatch.mock.calls).toEqual([
      ['ep_1', { sinceMs: 5 }, 10, undefined],
      ['ep_1', { sinceMs: 5 }, 10, { startedAt: '1', createdAt: '1', seq: '1' }],
      ['ep_1', { sinceMs: 5 }, 10, { startedAt: '1', createdAt: '2', seq: '2' }],
    ]);
    expect(queued).toHaveBeenCalledTimes(3);
  });

  it('should let the event loop run between two batches', async () => {
    const events: string[] = [];
    let running = true;
    const otherWork = () => {
      events.push('other work');
      if (running) setImmediate(otherWork);
    };
    setImmediate(otherWork);
    await recoverInBatches(
      logWith(4, events),
      'ep_1',
      { sinceMs: 0 },
      {
        batchSize: 10,
        stop: new AbortController().signal,
        queued: () => undefined,
      },
    );
    running = false;
    const batches = events.flatMap((event, i) => (event === 'batch' ? [i] : []));
    expect(batches).toHaveLength(4);
    for (let i = 1; i < batches.length; i++) {
      expect(events.slice(batches[i - 1] + 1, batches[i])).toContain('other work');
    }
  });

  it('should stop between two batches once the stop signal is raised, saying how many it queued', async () => {
    const stop = new AbortController();
    const log = logWith(5, []);
    const outcome = await recoverInBatches(
      log,
      'ep_1',
      { sinceMs: 0 },
      {
        batchSize: 10,
        stop: stop.signal,
        queued: () => (log.recoverBatch.mock.calls.length === 2 ? stop.abort() : undefined),
      },
    );
    expect(outcome).toEqual({ queued: 20, stopped: true });
    expect(log.recoverBatch).toHaveBeenCalledTimes(2);
  });
});
