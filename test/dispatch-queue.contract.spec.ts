import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Logger } from '@nestjs/common';
import { Client } from 'pg';
import { CompiledQuery, sql } from 'kysely';
import { PostgresDatabase } from '../src/database/postgres-database';
import { SqliteDatabase } from '../src/database/sqlite-database';
import { EndpointIds } from '../src/webhooks/endpoints/endpoint-ids';
import { newSecret } from '../src/webhooks/endpoints/endpoints.service';
import { attemptResult, GONE_REASON, THROTTLE_AFTER_SIGNALS } from '../src/webhooks/dispatch-policy';
import { PLANT_CREATED } from '../src/plants/plant-events';
import { OutboxWriter } from '../src/webhooks/outbox.writer';
import { AttemptResult, ClaimedDelivery } from '../src/webhooks/deliveries';
import { SecretsCipher } from '../src/webhooks/secrets/secrets-cipher';
import { CONFIGURED_SECRETS, SecretsColumn } from '../src/webhooks/secrets/secrets-column';
import { eventually } from './support/eventually';
import { describeOnEachStore, describePostgres } from './support/postgres';
import { secretsColumn, useWebhookStores, WEBHOOK_TEST_MIGRATIONS, webhookStores } from './support/webhook-stores';

const ids = new EndpointIds();
const newEndpointId = () => ids.next();
const LEASE_MS = 60_000;
const DAY_MS = 86_400_000;
const attempt = { atMs: Date.now(), durationMs: 3 };
const ok: AttemptResult = { kind: 'succeeded', attempt: { ...attempt, responseStatus: 200 } };
/** A failed attempt that got `status` (or no answer), retried at once. */
const retry = (status?: number, retryAfterMs?: number): AttemptResult =>
  attemptResult(
    {
      outcome: status === undefined ? 'timeout' : status === 410 ? 'gone' : status < 500 ? '4xx' : '5xx',
      detail: status === undefined ? 'no answer within 1000 ms' : `HTTP ${status}`,
      ...(status === undefined ? {} : { status }),
      ...(retryAfterMs === undefined ? {} : { retryAfterMs }),
      ...attempt,
    },
    0,
    [0],
  );

/**
 * The dispatch queue (`DispatchQueue`), written once and run on each store: per-endpoint claims under
 * a lease and the cap the dispatch policy gives, results with their attempt rows and the endpoint's
 * health (throttling, pauses, disabling), the backlog, and pruning.
 */
describeOnEachStore('the webhook dispatch queue (contract, on %s)', (postgres) => {
  const { stores, commit, endpoint } = useWebhookStores(postgres);
  const claimAll = (cap = 8) => stores.queue.claim(100, LEASE_MS, cap);
  /** Records `result` for each of `claimed`; a throttled endpoint's pause is `firstRetryMs` (0: none). */
  const record = (claimed: ClaimedDelivery[], result: AttemptResult, disableAfterMs = DAY_MS, firstRetryMs = 0) =>
    stores.queue.record(
      claimed.map((delivery) => ({ delivery, result })),
      disableAfterMs,
      [firstRetryMs],
    );

  if (postgres) {
    it('should claim and record with unnamed statements, planned for their values each time', async () => {
      await endpoint('http://127.0.0.1:1/named');
      await commit('a', 'b');
      const query = jest.spyOn(Client.prototype, 'query');
      await record(await claimAll(), retry(500));
      const sent = query.mock.calls.map(([config]) => config as unknown as { text: string; name?: string });
      expect(sent.length).toBeGreaterThanOrEqual(3); // the claim, the health read, the record
      // A generic plan kept from an empty queue would scan a full one (see SqlDispatchQueue).
      for (const config of sent) expect(config.name).toBeUndefined();
    });
  }

  it('should claim at most the cap per endpoint, counting what is leased', async () => {
    await endpoint('http://127.0.0.1:1/busy');
    await commit('a', 'b', 'c', 'd', 'e');
    const first = await claimAll(2);
    expect(first).toHaveLength(2);
    expect(await claimAll(2)).toEqual([]); // both slots leased
    await record(first.slice(0, 1), ok);
    expect(await claimAll(2)).toHaveLength(1);
  });
  it('should keep an endpoint at its full cap, unpaused, when events fail (500), each retried on its own', async () => {
    await endpoint('http://127.0.0.1:1/picky');
    await commit('a', 'b', 'c', 'd', 'e');
    const first = await claimAll(2);
    const { throttled } = await record(first, retry(500), DAY_MS, 60_000);
    expect(throttled).toEqual([]);
    // Two more new events, and the two failed ones (due again at once): still two at a time.
    const next = await claimAll(2);
    expect(next).toHaveLength(2);
    await record(next, retry(400), DAY_MS, 60_000);
    expect(await claimAll(2)).toHaveLength(2);
    expect(await stores.queue.throttledEndpoints()).toBe(0);
  });
  it('should throttle an endpoint to one probe after five endpoint signals in a row, and bring it back on a 2xx', async () => {
    const id = await endpoint('http://127.0.0.1:1/down');
    await commit('a', 'b', 'c', 'd', 'e', 'f', 'g', 'h');
    // Four signals, with event failures between (a 500 does not break the row): still full speed.
    const released: AttemptResult = { kind: 'released' };
    for (const result of [retry(502), retry(500), retry(), retry(503), retry(500), retry(504)]) {
      const claimed = await claimAll(3);
      expect(claimed).toHaveLength(3);
      expect((await record(claimed.slice(0, 1), result)).throttled).toEqual([]);
      await record(claimed.slice(1), released);
    }
    expect(await stores.queue.throttledEndpoints()).toBe(0);
    const [fifth, ...others] = await claimAll(3);
    expect(await record([fifth], retry(429))).toMatchObject({ throttled: [{ id, url: 'http://127.0.0.1:1/down' }] });
    expect(await stores.queue.throttledEndpoints()).toBe(1);
    // One probe at a time, counting what is still leased: none while the two others are out.
    expect(await claimAll(3)).toEqual([]);
    await record(others, released);
    const probe = await claimAll(3);
    expect(probe).toHaveLength(1);
    expect(await claimAll(3)).toEqual([]);
    // A failed probe (even a 500) keeps it throttled; a 2xx brings it back to full speed.
    expect(await record(probe, retry(500))).toMatchObject({ throttled: [], recovered: [] });
    const again = await claimAll(3);
    expect(again).toHaveLength(1);
    expect(await record(again, ok)).toMatchObject({ recovered: [{ id, url: 'http://127.0.0.1:1/down' }] });
    expect(await stores.queue.throttledEndpoints()).toBe(0);
    expect(await claimAll(3)).toHaveLength(3);
  });
  it('should leave a throttled endpoint alone while it backs off', async () => {
    await endpoint('http://127.0.0.1:1/slow');
    await commit('a', 'b');
    for (let i = 0; i < THROTTLE_AFTER_SIGNALS; i++) {
      const [claimed] = await claimAll(1);
      await record([claimed], retry(), DAY_MS, i === THROTTLE_AFTER_SIGNALS - 1 ? 60_000 : 0);
    }
    expect(await claimAll()).toEqual([]); // paused for a minute
  });
  it("should hold every delivery of an endpoint for a 429's Retry-After, but only its own for a 503's", async () => {
    const limited = await endpoint('http://127.0.0.1:1/limited');
    const busy = await endpoint('http://127.0.0.1:1/busy');
    await commit('a', 'b');
    const claimed = await claimAll(1);
    await record(
      claimed.filter((d) => d.endpointId === limited),
      retry(429, 60_000),
    );
    await record(
      claimed.filter((d) => d.endpointId === busy),
      retry(503, 60_000),
    );
    // The 503's endpoint sends its other event; the 429's sends nothing for a minute.
    const next = await claimAll();
    expect(next.map((d) => d.endpointId)).toEqual([busy]);
    expect(next[0].webhookId).not.toBe(claimed.find((d) => d.endpointId === busy)!.webhookId);
    const held = (await stores.log.list(limited, { limit: 10, status: 'pending' })).map((d) => d.nextAttemptAtMs!);
    expect(Math.min(...held.filter((at) => at > Date.now()))).toBeGreaterThan(Date.now() + 50_000);
  });
  it('should disable an endpoint that answered 410 Gone at once, failing its pending deliveries', async () => {
    const id = await endpoint('http://127.0.0.1:1/gone');
    await commit('a', 'b', 'c');
    const [first] = await claimAll(1);
    expect(await record([first], retry(410))).toMatchObject({
      disabled: [{ id, url: 'http://127.0.0.1:1/gone', why: 'gone' }],
    });
    expect(await stores.endpoints.get(id)).toMatchObject({ disabled: true, disabledReason: GONE_REASON });
    expect(await stores.log.list(id, { limit: 10, status: 'pending' })).toEqual([]);
    expect(await stores.log.list(id, { limit: 10, status: 'failed' })).toHaveLength(3);
    expect(await claimAll()).toEqual([]);
  });
  it('should disable an endpoint that answered 410 Gone even when a later result of the batch succeeded', async () => {
    const id = await endpoint('http://127.0.0.1:1/gone-then-ok');
    await commit('a', 'b', 'c');
    const [gone, fine] = await claimAll(2);
    const recorded = await stores.queue.record(
      [
        { delivery: gone, result: retry(410) },
        { delivery: fine, result: ok },
      ],
      DAY_MS,
      [0],
    );
    expect(recorded).toMatchObject({ disabled: [{ id, why: 'gone' }] });
    // What the dispatcher is told is what the store holds: disabled, nothing left to send.
    expect(await stores.endpoints.get(id)).toMatchObject({ disabled: true, disabledReason: GONE_REASON });
    expect(await stores.log.list(id, { limit: 10, status: 'pending' })).toEqual([]);
    expect(await claimAll()).toEqual([]);
  });
  it('should keep a healthy endpoint flowing while another holds all its slots', async () => {
    const hanging = await endpoint('http://127.0.0.1:1/hang');
    const healthy = await endpoint('http://127.0.0.1:1/ok');
    await commit('a', 'b', 'c', 'd');
    const claimed = await claimAll(2);
    expect(claimed.filter((d) => d.endpointId === hanging)).toHaveLength(2);
    expect(claimed.filter((d) => d.endpointId === healthy)).toHaveLength(2);
    await record(
      claimed.filter((d) => d.endpointId === healthy),
      ok,
    );
    await commit('e');
    // The hanging endpoint's sends are still leased: only the healthy endpoint's new delivery comes.
    expect((await claimAll(2)).map((d) => d.endpointId)).toEqual([healthy, healthy]);
  });
  it('should record a result only under its own lease, with an attempt row, and show it in the log', async () => {
    const id = await endpoint('http://127.0.0.1:1/a');
    await commit('Aloe');
    const [claimed] = await claimAll();
    const stale = { ...claimed, leaseToken: '00000000-0000-4000-8000-000000000000' };
    expect((await record([stale], ok)).recorded).toBe(0);
    expect((await record([claimed], retry(503))).recorded).toBe(1);
    const [again] = await claimAll();
    expect(again.attempts).toBe(1);
    expect((await record([again], ok)).recorded).toBe(1);
    const log = await stores.log.get(id, claimed.webhookId);
    expect(log).toMatchObject({
      id: claimed.webhookId,
      status: 'succeeded',
      attempts: 2,
      payload: '{"id":9007199254740993,"name":"Aloe"}',
      lastAttempt: { responseStatus: 200, durationMs: 3 },
    });
    expect(log!.attemptLog.map((a) => a.responseStatus)).toEqual([503, 200]);
    expect(log!.nextAttemptAtMs).toBeUndefined();
  });
  it('should write no attempt row for a stale result recorded together with the current one', async () => {
    const id = await endpoint('http://127.0.0.1:1/a');
    await commit('Aloe');
    const [claimed] = await claimAll();
    const stale = { ...claimed, leaseToken: '00000000-0000-4000-8000-000000000000' };
    expect((await record([stale, claimed], retry(503))).recorded).toBe(1);
    const log = await stores.log.get(id, claimed.webhookId);
    expect(log).toMatchObject({ status: 'pending', attempts: 1 });
    expect(log!.attemptLog.map((a) => a.responseStatus)).toEqual([503]);
  });
  it('should keep a delivery resent while it was out pending, on the schedule of the resend, its attempt counted', async () => {
    const id = await endpoint('http://127.0.0.1:1/a');
    await commit('a', 'b');
    const [first, second] = await claimAll();
    // Both answered; both resent before their results are recorded (a success, a retry a day away).
    for (const delivery of [first, second]) {
      expect(await stores.log.resend(id, delivery.webhookId)).toMatchObject({ status: 'pending' });
    }
    const later: AttemptResult = { kind: 'retry', delayMs: DAY_MS, attempt, failure: { meaning: 'event' } };
    expect(
      (
        await stores.queue.record(
          [
            { delivery: first, result: ok },
            { delivery: second, result: later },
          ],
          DAY_MS,
          [0],
        )
      ).recorded,
    ).toBe(2);
    for (const delivery of [first, second]) {
      expect(await stores.log.get(id, delivery.webhookId)).toMatchObject({ status: 'pending', attempts: 1 });
    }
    // Due at once, as the resend said, on the whole schedule again (it began after the attempt that
    // was out), and recorded as usual when sent again.
    const again = await claimAll();
    expect(again.map((d) => [d.webhookId, d.attempts, d.attemptsOnSchedule])).toEqual([
      [first.webhookId, 1, 0],
      [second.webhookId, 1, 0],
    ]);
    expect((await record(again, ok)).recorded).toBe(2);
    const log = await stores.log.get(id, first.webhookId);
    expect(log).toMatchObject({ status: 'succeeded', attempts: 2 });
    expect(log!.attemptLog.map((a) => a.responseStatus)).toEqual([200, 200]);
  });
  it("should leave an endpoint's health alone for results it did not record (their lease was no longer theirs)", async () => {
    const id = await endpoint('http://127.0.0.1:1/taken-over');
    await commit('a', 'b', 'c', 'd', 'e', 'f');
    const claimed = await claimAll(THROTTLE_AFTER_SIGNALS);
    expect(claimed).toHaveLength(THROTTLE_AFTER_SIGNALS);
    // Five endpoint signals, every one under a lease another claim holds now: none counts.
    const stale = claimed.map((d) => ({ ...d, leaseToken: '00000000-0000-4000-8000-000000000000' }));
    expect(await record(stale, retry(503))).toEqual({ recorded: 0, disabled: [], throttled: [], recovered: [] });
    expect(await record(stale, retry(410))).toEqual({ recorded: 0, disabled: [], throttled: [], recovered: [] });
    expect(await stores.queue.throttledEndpoints()).toBe(0);
    expect(await stores.endpoints.get(id)).toMatchObject({ disabled: false });
    // The real results still count: the endpoint is at full speed, not paused.
    await record(claimed, ok);
    expect(await claimAll(THROTTLE_AFTER_SIGNALS)).toHaveLength(1);
  });
  it("should keep claiming for other endpoints when one endpoint's secrets open with no configured key", async () => {
    const logged = jest.spyOn(Logger.prototype, 'error').mockImplementation(() => undefined);
    const healthy = await endpoint('http://127.0.0.1:1/ok');
    // Sealed under a key this store does not have (one left out of WEBHOOK_SECRETS_KEY).
    const lostKey = new SecretsColumn(new SecretsCipher([Buffer.alloc(32, 9).toString('base64')]), []);
    const secret = newSecret();
    const lost = (
      await webhookStores(stores.database, lostKey).endpoints.create(
        { id: newEndpointId(), url: 'http://127.0.0.1:1/lost', description: '', disabled: false, secret },
        100,
      )
    ).id;
    await commit('a', 'b');
    expect((await claimAll()).map((d) => d.endpointId)).toEqual([healthy, healthy]);
    await commit('c');
    expect((await claimAll()).map((d) => d.endpointId)).toEqual([healthy]);
    // Said once (its id, never a secret), not at every claim.
    expect(logged).toHaveBeenCalledTimes(1);
    expect(logged.mock.calls[0][0]).toContain(lost);
    expect(JSON.stringify(logged.mock.calls)).not.toContain(secret.slice(6));
    // Its deliveries stay pending, unleased, no attempt counted: a store with its key claims them at once.
    expect((await stores.log.list(lost, { limit: 10 })).map((d) => [d.status, d.attempts])).toEqual([
      ['pending', 0],
      ['pending', 0],
      ['pending', 0],
    ]);
    const withKey = await webhookStores(stores.database, lostKey).queue.claim(100, LEASE_MS, 8);
    expect(withKey.map((d) => [d.endpointId, d.attempts, d.secrets])).toEqual([
      [lost, 0, [{ secret }]],
      [lost, 0, [{ secret }]],
      [lost, 0, [{ secret }]],
    ]);
  });
  it("should hold back a config endpoint whose row holds a stored secret, and an api endpoint holding WEBHOOK_SECRET's place", async () => {
    const logged = jest.spyOn(Logger.prototype, 'error').mockImplementation(() => undefined);
    const configured = newSecret();
    const column = secretsColumn([configured]);
    const queue = webhookStores(stores.database, column).queue;
    const healthy = await endpoint('http://127.0.0.1:1/ok');
    const api = await endpoint('http://127.0.0.1:1/api');
    await stores.endpoints.reconcile(['http://127.0.0.1:1/config'], newEndpointId);
    const config = (await stores.endpoints.list(10)).find((each) => each.source === 'config')!.id;
    // Written in by someone with access to the database.
    const setSecrets = (id: string, secrets: string) =>
      stores.database.execute(
        'test',
        stores.database.kysely.updateTable('webhook_endpoints').set({ secrets }).where('id', '=', id).compile(),
      );
    await setSecrets(api, CONFIGURED_SECRETS);
    // Sealed for the config row itself: it would open there, were it an endpoint of the API.
    await setSecrets(config, column.write([{ secret: newSecret() }], config));
    await commit('a');

    expect((await queue.claim(100, LEASE_MS, 8)).map((d) => [d.endpointId, d.secrets])).toEqual([
      [healthy, [{ secret: expect.stringMatching(/^whsec_/) }]],
    ]);
    expect(logged.mock.calls.map(([line]) => (line as string).split(':')[0]).sort()).toEqual(
      [`Cannot sign for webhook endpoint ${api}`, `Cannot sign for webhook endpoint ${config}`].sort(),
    );
    expect(JSON.stringify(logged.mock.calls)).not.toContain(configured.slice(6));
    for (const id of [api, config]) {
      expect((await stores.log.list(id, { limit: 10 })).map((d) => [d.status, d.attempts])).toEqual([['pending', 0]]);
    }
  });
  it('should disable an endpoint that failed for the whole window, failing its pending deliveries', async () => {
    const id = await endpoint('http://127.0.0.1:1/dead');
    await commit('a', 'b');
    const [first] = await claimAll(1);
    const { disabled } = await record([first], retry(), 0);
    expect(disabled).toEqual([{ id, url: 'http://127.0.0.1:1/dead', why: 'failing' }]);
    expect(await stores.endpoints.get(id)).toMatchObject({
      disabled: true,
      disabledReason: expect.stringContaining('WEBHOOK_DISABLE_AFTER'),
    });
    expect(await stores.log.list(id, { limit: 10, status: 'pending' })).toEqual([]);
    expect(await stores.log.list(id, { limit: 10, status: 'failed' })).toHaveLength(2);
    await commit('c'); // while disabled: no delivery for it
    expect(await stores.log.list(id, { limit: 10 })).toHaveLength(2);
    // Re-enabled, then recovered: what it missed is due again.
    await stores.endpoints.update(id, { disabled: false });
    expect(await stores.endpoints.get(id)).not.toHaveProperty('disabledReason');
    expect(await stores.log.recoverBatch(id, { sinceMs: Date.now() - DAY_MS }, 100)).toEqual({ queued: 2 });
    expect(await claimAll()).toHaveLength(2);
  });
  it('should delete an endpoint with its deliveries, so nothing queued for it is sent', async () => {
    const id = await endpoint('http://127.0.0.1:1/a');
    await commit('a');
    expect(await stores.endpoints.delete(id)).toBe(true);
    expect(await claimAll()).toEqual([]);
    expect(await stores.queue.backlog()).toEqual({ pending: 0 });
  });
  it('should prune finished deliveries, their attempts and messages left with none', async () => {
    const id = await endpoint('http://127.0.0.1:1/a');
    await commit('a', 'b');
    const claimed = await claimAll();
    await record(claimed.slice(0, 1), ok);
    await new Promise((resolve) => setTimeout(resolve, 20));
    // One delivery and one message (the other stays: its delivery is pending).
    expect(await stores.queue.prune(1, 1000)).toBe(2);
    expect(await stores.log.get(id, claimed[0].webhookId)).toBeUndefined();
    expect((await stores.log.list(id, { limit: 10 })).map((d) => d.id)).toEqual([claimed[1].webhookId]);
  });
  it('should reconcile the endpoints of the configuration: add, keep, re-sign and remove', async () => {
    const secret = newSecret();
    expect(await stores.endpoints.reconcile(['http://127.0.0.1:1/a', 'http://127.0.0.1:1/b'], newEndpointId)).toEqual({
      added: 2,
      removed: 0,
    });
    const [a] = await stores.endpoints.list(1);
    await commit('x');
    // A restart with another WEBHOOK_SECRET: config endpoints sign with what is configured now.
    const other = newSecret();
    const column = secretsColumn([other, secret]);
    const restarted = webhookStores(stores.database, column);

    expect(await restarted.endpoints.reconcile(['http://127.0.0.1:1/a'], newEndpointId)).toEqual({
      added: 0,
      removed: 1,
    });
    expect(await restarted.endpoints.list(10)).toEqual([expect.objectContaining({ id: a.id, source: 'config' })]);
    expect((await restarted.endpoints.secrets(a.id))!.map((s) => s.secret)).toEqual([other, secret]);
    const claimed = await restarted.queue.claim(100, LEASE_MS, 8);
    expect(claimed.map((d) => ({ endpointId: d.endpointId, secrets: d.secrets }))).toEqual([
      { endpointId: a.id, secrets: [{ secret: other }, { secret }] },
    ]);
  });
});

/**
 * PostgreSQL's row locks across instances: every transaction that writes an endpoint and its
 * deliveries takes the endpoint first, so none of them aborts another in a deadlock (and a record
 * aborted so would lose its batch of results).
 */
describePostgres('the PostgreSQL dispatch queue beside other instances', () => {
  const { stores, commit, endpoint } = useWebhookStores(true);
  const pg = () => stores.database as PostgresDatabase;
  const failPending =
    "UPDATE webhook_deliveries SET status = 'failed', finished_at = clock_timestamp(), " +
    "locked_until = NULL, lease_token = NULL WHERE endpoint_id = $1 AND status = 'pending'";

  /**
   * Another instance's record that disables endpoint `id`, step by step: its endpoint row locked;
   * then, once `operation` waits on that lock, its pending deliveries failed; then its commit.
   * Resolves with what `operation` gave, and how many deliveries the disable failed.
   */
  const besideADisable = async <T>(id: string, operation: () => Promise<T>): Promise<{ result: T; failed: number }> => {
    let done!: Promise<T>;
    const failed = await pg().transaction('disable an endpoint', async (tx) => {
      await tx.execute(CompiledQuery.raw('SELECT id FROM webhook_endpoints WHERE id = $1 FOR UPDATE', [id]));
      const [{ pid }] = (await tx.execute(sql<{ pid: number }>`SELECT pg_backend_pid() AS pid`.compile(pg().kysely)))
        .rows;
      done = operation();
      done.catch(() => undefined); // awaited below
      await eventually(async () => {
        const waiting = await pg().execute(
          'see who waits',
          sql<{
            n: number;
          }>`SELECT count(*)::int AS n FROM pg_stat_activity WHERE ${pid} = ANY(pg_blocking_pids(pid))`.compile(
            pg().kysely,
          ),
        );
        return waiting.rows[0].n > 0;
      });
      return (await tx.execute(CompiledQuery.raw(failPending, [id]))).affectedRows;
    });
    return { result: await done, failed };
  };

  it('should record a result while another instance disables its endpoint, neither aborted', async () => {
    const id = await endpoint('http://127.0.0.1:1/a');
    await commit('a', 'b');
    const [claimed] = await stores.queue.claim(1, LEASE_MS, 8);
    const { result, failed } = await besideADisable(id, () =>
      stores.queue.record([{ delivery: claimed, result: ok }], DAY_MS, [0]),
    );
    // The disable came first: it failed both, lease and all, so this result is not recorded.
    expect(failed).toBe(2);
    expect(result).toEqual({ recorded: 0, disabled: [], throttled: [], recovered: [] });
    expect((await stores.log.list(id, { limit: 10 })).map((d) => d.status)).toEqual(['failed', 'failed']);
  });
  it('should delete an endpoint while another instance disables it, neither aborted', async () => {
    const id = await endpoint('http://127.0.0.1:1/a');
    await commit('a', 'b');
    const { result, failed } = await besideADisable(id, () => stores.endpoints.delete(id));
    expect({ result, failed }).toEqual({ result: true, failed: 2 });
    expect(await stores.queue.backlog()).toEqual({ pending: 0 });
  });
  it('should claim past the deliveries a disable holds, without waiting for it', async () => {
    const held = await endpoint('http://127.0.0.1:1/held');
    const other = await endpoint('http://127.0.0.1:1/other');
    await commit('a');
    await pg().transaction('disable an endpoint', async (tx) => {
      await tx.execute(CompiledQuery.raw('SELECT id FROM webhook_endpoints WHERE id = $1 FOR UPDATE', [held]));
      await tx.execute(CompiledQuery.raw(failPending, [held]));
      // Before the disable commits: the claim takes the other endpoint's delivery, and waits on nothing.
      expect((await stores.queue.claim(100, LEASE_MS, 8)).map((d) => d.endpointId)).toEqual([other]);
    });
    expect(await stores.queue.claim(100, LEASE_MS, 8)).toEqual([]);
  });
});

describe('the SQLite dispatch queue', () => {
  it('should keep a claim leased when the wall clock is set an hour forward, and hand it out once the lease ran out', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'plant-store-leases-'));
    const database = new SqliteDatabase(join(dir, 'plants.db'), WEBHOOK_TEST_MIGRATIONS);
    await database.onModuleInit();
    try {
      const { endpoints, outbox, queue: store } = webhookStores(database);

      await endpoints.create(
        { id: newEndpointId(), url: 'http://127.0.0.1:1/a', description: '', disabled: false, secret: newSecret() },
        100,
      );
      await database.transaction('write an event', (tx) =>
        new OutboxWriter(outbox, () => undefined, PLANT_CREATED).publish(tx, [{ id: 1n, name: 'a' }]),
      );
      expect(await store.claim(10, 1, 8)).toHaveLength(1);
      await new Promise((resolve) => setTimeout(resolve, 20));
      const [again] = await store.claim(10, 60_000, 8);
      expect(again).toMatchObject({ attempts: 0 });
      const now = Date.now();
      jest.spyOn(Date, 'now').mockReturnValue(now + 3_600_000);
      expect(await store.claim(10, 60_000, 8)).toEqual([]);
    } finally {
      jest.restoreAllMocks();
      database.onApplicationShutdown();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
