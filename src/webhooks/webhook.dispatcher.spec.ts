import { Logger } from '@nestjs/common';
import { WebhookConfig } from '../config/app-config';
import { ShutdownSignal } from '../lifecycle/shutdown-signal';
import { DispatchQueue } from './persistence/dispatch-queue';
import { WebhookDispatcher } from './webhook.dispatcher';
import { WebhookMetrics } from './webhook.metrics';
import { WebhookSender } from './webhook.sender';

const CONFIG: WebhookConfig = {
  configured: { urls: [], secrets: [] },
  timeoutMs: 1000,
  retryScheduleMs: [1000],
  retentionMs: 1000,
  concurrency: 4,
  endpointConcurrency: 2,
  pollIntervalMs: 10_000,
  secretOverlapMs: 1000,
  disableAfterMs: 1000,
  blockedNetworks: [],
  httpsOnly: false,
  allowedNetworks: [],
  maxEndpoints: 100,
  secretsKey: { kind: 'none' },
};

/** A store with nothing to send and `batches` full batches of finished rows to prune, recording what happens. */
function storeWith(batches: number, events: string[]): jest.Mocked<DispatchQueue> {
  let left = batches;
  return {
    claim: jest.fn().mockResolvedValue([]),
    record: jest.fn().mockResolvedValue({ recorded: 0, disabled: [], throttled: [], recovered: [] }),
    backlog: jest.fn().mockResolvedValue({ pending: 0 }),
    prune: jest.fn().mockImplementation(() => {
      events.push('prune');
      return Promise.resolve(left-- > 0 ? 1000 : 3);
    }),
  } as unknown as jest.Mocked<DispatchQueue>;
}

describe('WebhookDispatcher', () => {
  describe('when it prunes many finished deliveries', () => {
    it('should let the event loop run between batches of the prune', async () => {
      // Its "Pruned 3003 finished webhook deliveries" is not a test result: kept out of the run's output.
      jest.spyOn(Logger.prototype, 'log').mockImplementation(() => undefined);
      const events: string[] = [];
      const store = storeWith(3, events);
      const dispatcher = new WebhookDispatcher(
        CONFIG,
        store,
        { close: () => Promise.resolve() } as WebhookSender,
        {} as WebhookMetrics,
        new ShutdownSignal(),
      );
      // Something else that needs the loop all along (a request's callbacks, say).
      let running = true;
      const otherWork = () => {
        events.push('other work');
        if (running) setImmediate(otherWork);
      };
      setImmediate(otherWork);
      dispatcher.onApplicationBootstrap();
      while (events.filter((event) => event === 'prune').length < 4)
        await new Promise((resolve) => setTimeout(resolve, 1));
      await dispatcher.onModuleDestroy();
      running = false;
      jest.restoreAllMocks();
      const prunes = events.flatMap((event, i) => (event === 'prune' ? [i] : []));
      // Other work ran between each two batches, not only after the last one.
      for (let i = 1; i < prunes.length; i++) {
        expect(events.slice(prunes[i - 1] + 1, prunes[i])).toContain('other work');
      }
    });
  });
});
