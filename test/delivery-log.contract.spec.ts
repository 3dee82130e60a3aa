import BetterSqlite3 from 'better-sqlite3';
import { BUSY_WAIT_MS } from '../src/database/sqlite-database';
import { StorageUnavailableError } from '../src/database/storage-unavailable.error';
import { attemptResult } from '../src/webhooks/dispatch-policy';
import { recoverInBatches } from '../src/webhooks/endpoints/recover-in-batches';
import { AttemptResult, ClaimedDelivery, RecoverCursor } from '../src/webhooks/deliveries';
import { describeOnEachStore } from './support/postgres';
import { useWebhookStores } from './support/webhook-stores';

const DAY_MS = 86_400_000;
const attempt = { atMs: Date.now(), durationMs: 3 };
const ok: AttemptResult = { kind: 'succeeded', attempt: { ...attempt, responseStatus: 200 } };
/** Two retries after the first attempt, each due at once: three attempts, then failed. */
const SCHEDULE = [0, 0];
/** What the dispatch policy makes of a 500 (about that event only) for this delivery. */
const refused = (delivery: ClaimedDelivery): AttemptResult =>
  attemptResult({ outcome: '5xx', status: 500, detail: 'HTTP 500', ...attempt }, delivery.attemptsOnSchedule, SCHEDULE);
const names = (count: number, prefix = 'p') => Array.from({ length: count }, (_, i) => `${prefix}${i}`);
const never = new AbortController().signal;

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
  /**
   * Sends whatever is due to a receiver that refuses every event (500), as the dispatcher does, until
   * nothing is due: each delivery fails once its schedule is used up. Resolves with each delivery's
   * `attemptsOnSchedule` at each of its claims, by endpoint and webhook-id (`"ep_… msg_…"`).
   */
  const refuseAll = async () => {
    const claims = new Map<string, number[]>();
    for (let claimed = await claimAll(); claimed.length > 0; claimed = await claimAll()) {
      for (const { endpointId, webhookId, attemptsOnSchedule } of claimed) {
        const key = `${endpointId} ${webhookId}`;
        claims.set(key, [...(claims.get(key) ?? []), attemptsOnSchedule]);
      }
      await stores.queue.record(
        claimed.map((delivery) => ({ delivery, result: refused(delivery) })),
        DAY_MS,
        SCHEDULE,
      );
    }
    return claims;
  };
  /** A whole recover, as the service runs it, in batches of `batchSize`. */
  const recover = async (id: string, sinceMs: number, batchSize = 500, untilMs?: number) => {
    const range = untilMs === undefined ? { sinceMs } : { sinceMs, untilMs };
    const outcome = await recoverInBatches(stores.log, id, range, { batchSize, stop: never, queued: () => undefined });
    return outcome.queued;
  };
  const byStatus = async (id: string, status: 'pending' | 'failed') =>
    (await stores.log.list(id, { limit: 100, status })).length;
  const since = () => Date.now() - DAY_MS;

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
  if (!postgres) {
    it(`should resend on a file another process is writing once it is free, and answer 503 after ${BUSY_WAIT_MS} ms`, async () => {
      const id = await endpoint('http://127.0.0.1:1/a');
      await commit('a');
      const [delivery] = await stores.log.list(id, { limit: 1 });
      const other = new BetterSqlite3(stores.database.location.replace(/^file /, ''));
      try {
        other.exec('BEGIN IMMEDIATE');
        setTimeout(() => other.exec('COMMIT'), BUSY_WAIT_MS / 2);
        await expect(stores.log.resend(id, delivery.id)).resolves.toMatchObject({ id: delivery.id, status: 'pending' });
        other.exec('BEGIN IMMEDIATE');
        await expect(stores.log.resend(id, delivery.id)).rejects.toThrow(StorageUnavailableError);
        other.exec('ROLLBACK');
      } finally {
        other.close();
      }
    });
  }
  it('should recover only failed deliveries created in [since, until)', async () => {
    const id = await endpoint('http://127.0.0.1:1/a');
    await commit('a', 'b');
    const claimed = await claimAll();
    await record(claimed, {
      kind: 'failed',
      attempt: { ...attempt, responseStatus: 404 },
      failure: { meaning: 'event' },
    });
    expect(await recover(id, Date.now() + DAY_MS)).toBe(0);
    expect(await recover(id, Date.now() - DAY_MS, 500, Date.now() - DAY_MS / 2)).toBe(0);
    expect(await recover(id, Date.now() - DAY_MS)).toBe(2);
    expect(await recover(id, Date.now() - DAY_MS)).toBe(0); // pending now, not failed
  });

  it('should recover a backlog of several batches, each failed delivery once, with the whole schedule again', async () => {
    const id = await endpoint('http://127.0.0.1:1/a');
    const other = await endpoint('http://127.0.0.1:1/b');
    // One transaction: on SQLite they share one created_at, so the batches' order rests on the row id too.
    await commit(...names(23));
    const first = await refuseAll();
    expect([...first.values()]).toEqual(Array(46).fill([0, 1, 2]));
    await commit('succeeded', 'pending');
    await record(await claimAll(), ok); // the two new ones, to both endpoints
    await commit('left pending');
    const batches = jest.spyOn(stores.log, 'recoverBatch');

    // In batches of 5: 5, 5, 5, 5, then 3 (fewer than a batch: the last).
    expect(await recover(id, since(), 5)).toBe(23);
    expect(batches).toHaveBeenCalledTimes(5);
    expect(await byStatus(id, 'failed')).toBe(0);
    expect(await byStatus(other, 'failed')).toBe(23); // another endpoint's are not this recover's
    // Each gets the whole schedule again: three more attempts, then failed; attempts are the total.
    const again = await refuseAll();
    const recovered = (await stores.log.list(id, { limit: 100 })).filter((d) => /"name":"p\d+"/.test(d.payload));
    expect(recovered).toHaveLength(23);
    for (const delivery of recovered) {
      expect(again.get(`${id} ${delivery.id}`)).toEqual([0, 1, 2]);
      const log = await stores.log.get(id, delivery.id);
      expect(log).toMatchObject({ status: 'failed', attempts: 6 });
      expect(log!.attemptLog).toHaveLength(6);
    }
    // Besides: only the one left pending, to each endpoint.
    expect(again.size).toBe(25);
  });

  it('should give a resent delivery the whole schedule again, its attempts the total', async () => {
    const id = await endpoint('http://127.0.0.1:1/a');
    await commit('a');
    await refuseAll();
    const [{ id: failed }] = await stores.log.list(id, { limit: 1 });
    expect(await stores.log.resend(id, failed)).toMatchObject({ status: 'pending', attempts: 3 });
    expect((await refuseAll()).get(`${id} ${failed}`)).toEqual([0, 1, 2]);
    const log = await stores.log.get(id, failed);
    expect(log).toMatchObject({ status: 'failed', attempts: 6 });
    expect(log!.attemptLog).toHaveLength(6);
  });

  it('should take up what a recover cut short left: by a failed batch, or by a shutdown between two', async () => {
    const id = await endpoint('http://127.0.0.1:1/a');
    await commit(...names(12));
    await refuseAll();
    const real = stores.log.recoverBatch.bind(stores.log);
    let calls = 0;
    const batches = jest
      .spyOn(stores.log, 'recoverBatch')
      .mockImplementation((...args) =>
        ++calls === 3
          ? Promise.reject(new StorageUnavailableError('the store went away', { cause: 'test' }))
          : real(...args),
      );
    // The third batch fails: the first two stay committed.
    await expect(recover(id, since(), 4)).rejects.toThrow(StorageUnavailableError);
    batches.mockRestore();
    expect([await byStatus(id, 'pending'), await byStatus(id, 'failed')]).toEqual([8, 4]);
    // The shutdown signal, raised during the first batch: the recover stops before the second.
    const stop = new AbortController();
    const stopped = await recoverInBatches(
      stores.log,
      id,
      { sinceMs: since() },
      {
        batchSize: 3,
        stop: stop.signal,
        queued: () => stop.abort(),
      },
    );
    expect(stopped).toEqual({ queued: 3, stopped: true });
    // Called again, it queues the rest, and nothing twice.
    expect(await recover(id, since(), 4)).toBe(1);
    expect([await byStatus(id, 'pending'), await byStatus(id, 'failed')]).toEqual([12, 0]);
    expect((await stores.log.list(id, { limit: 100 })).map((d) => d.attempts)).toEqual(Array(12).fill(3));
  });

  it('should bring each delivery back once between two recovers at once, even one that failed again meanwhile', async () => {
    const id = await endpoint('http://127.0.0.1:1/a');
    await commit(...names(10));
    await refuseAll();
    // Two at once, batch by batch in turn: each delivery is queued by one of them.
    const both = await Promise.all([recover(id, since(), 3), recover(id, since(), 3)]);
    expect(both[0] + both[1]).toBe(10);
    await refuseAll();

    // One recover takes its first batch; another brings back everything, and all of it fails again.
    const slow = await stores.log.recoverBatch(id, { sinceMs: since() }, 2);
    expect(slow.queued).toBe(2);
    expect(await recover(id, since())).toBe(8);
    await new Promise((resolve) => setTimeout(resolve, 5)); // the clock moves past the slow one's start
    expect([...(await refuseAll()).values()]).toEqual(Array(10).fill([0, 1, 2]));
    // The slow one goes on: what failed after it began was brought back by the other already.
    let rest = 0;
    for (let from: RecoverCursor | undefined = slow.next; from !== undefined;) {
      const batch = await stores.log.recoverBatch(id, { sinceMs: since() }, 2, from);
      rest += batch.queued;
      from = batch.next;
    }
    expect(rest).toBe(0);
    // A recover that starts now brings all of them back.
    expect(await recover(id, since())).toBe(10);
  });
});
