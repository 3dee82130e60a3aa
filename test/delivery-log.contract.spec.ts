import { AttemptResult } from '../src/webhooks/persistence/deliveries';
import { describeOnEachStore } from './support/postgres';
import { useWebhookStores } from './support/webhook-stores';

const DAY_MS = 86_400_000;
const attempt = { atMs: Date.now(), durationMs: 3 };
const ok: AttemptResult = { kind: 'succeeded', attempt: { ...attempt, responseStatus: 200 } };

/**
 * The delivery log (`DeliveryLog`), written once and run on each store: an endpoint's deliveries
 * newest first, by status, resend and recover. (A delivery read with its attempt log after results
 * is in the dispatch queue's suite, which makes the results.)
 */
describeOnEachStore('the webhook delivery log (contract, on %s)', (postgres) => {
  const { stores, commit, endpoint } = useWebhookStores(postgres);
  const claimAll = () => stores.queue.claim(100, 60_000, 8);
  const record = (claimed: Awaited<ReturnType<typeof claimAll>>, result: AttemptResult) =>
    stores.queue.record(
      claimed.map((delivery) => ({ delivery, result })),
      DAY_MS,
      [0],
    );

  it('should page the delivery log newest first, filter it by status, and resend one delivery', async () => {
    const id = await endpoint('http://127.0.0.1:1/a');
    await commit('a');
    await commit('b');
    await commit('c');
    const all = await stores.log.list(id, { limit: 2 });
    expect(all.map((d) => d.payload)).toEqual([expect.stringContaining('"c"'), expect.stringContaining('"b"')]);
    const rest = await stores.log.list(id, { limit: 2, after: all[1].seq });
    expect(rest.map((d) => d.payload)).toEqual([expect.stringContaining('"a"')]);
    const claimed = await claimAll();
    await record(claimed, ok);
    expect(await stores.log.list(id, { limit: 10, status: 'pending' })).toEqual([]);
    const resent = await stores.log.resend(id, all[0].id);
    expect(resent).toMatchObject({ id: all[0].id, status: 'pending', attempts: 1 });
    expect(resent!.nextAttemptAtMs).toBeLessThanOrEqual(Date.now() + 1000);
    expect((await claimAll()).map((d) => d.webhookId)).toEqual([all[0].id]);
    expect(await stores.log.resend(id, 'msg_none')).toBeUndefined();
  });
  it('should recover only failed deliveries created in [since, until)', async () => {
    const id = await endpoint('http://127.0.0.1:1/a');
    await commit('a', 'b');
    const claimed = await claimAll();
    await record(claimed, {
      kind: 'failed',
      attempt: { ...attempt, responseStatus: 404 },
      failure: { meaning: 'event' },
    });
    expect(await stores.log.recover(id, Date.now() + DAY_MS)).toBe(0);
    expect(await stores.log.recover(id, Date.now() - DAY_MS, Date.now() - DAY_MS / 2)).toBe(0);
    expect(await stores.log.recover(id, Date.now() - DAY_MS)).toBe(2);
    expect(await stores.log.recover(id, Date.now() - DAY_MS)).toBe(0); // pending now, not failed
  });
});
