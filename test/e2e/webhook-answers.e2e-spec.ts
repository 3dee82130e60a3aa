import { request, RequestOptions } from '../support/http';
import { createTestSchema, describeOnEachStore, TestSchema } from '../support/postgres';
import { eventually } from '../support/eventually';
import { createTestApp, TEST_METRICS_TOKEN, TestApp } from '../support/test-app';
import { makeSecret, ReceivedDelivery, WebhookReceiver } from '../support/webhook-receiver';

const ADMIN = 'admin-token-0123456789abcdef';

interface DeliveryBody {
  id: string;
  status: string;
  attempts: number;
  attemptLog?: { at: string; responseStatus?: number }[];
  nextAttemptAt?: string;
}

/** The plant id in a delivery's body. */
const plantId = (got: ReceivedDelivery) => Number(/"id":(-?\d+)/.exec(got.body)![1]);

/**
 * CONTRACT "What an answer means", with real receivers on 127.0.0.1: a failure is about its event
 * unless the answer says the endpoint is in trouble. Deterministic: every assertion waits for a
 * condition, and the only times compared are lower bounds the service must respect (a retry
 * schedule, a Retry-After), never how fast it was.
 */
describeOnEachStore('what a subscriber’s answer means (e2e on %s, receivers on 127.0.0.1)', (postgres) => {
  const secret = makeSecret();
  let receiver: WebhookReceiver;
  let server: TestApp;
  let schema: TestSchema | undefined;

  const start = async (env: Record<string, string>) => {
    schema = postgres ? await createTestSchema() : undefined;
    server = await createTestApp({
      ...(schema ? { DATABASE_URL: schema.url } : {}),
      ADMIN_TOKENS: ADMIN,
      WEBHOOK_URLS: receiver.url,
      WEBHOOK_SECRET: secret,
      WEBHOOK_ALLOWED_NETWORKS: '127.0.0.0/8,::1/128',
      WEBHOOK_TIMEOUT_MS: '2000',
      WEBHOOK_POLL_INTERVAL_MS: '50',
      ...env,
    });
  };
  const admin = (path: string, options: RequestOptions = {}) =>
    request(`${server.url}${path}`, { method: 'GET', auth: `Bearer ${ADMIN}`, ...options });
  const endpointId = async () => ((await admin('/webhooks/endpoints')).body as { id: string }[])[0].id;
  const deliveries = async (status?: string) =>
    (await admin(`/webhooks/endpoints/${await endpointId()}/deliveries?limit=1000${status ? `&status=${status}` : ''}`))
      .body as DeliveryBody[];
  const delivery = async (webhookId: string) =>
    (await admin(`/webhooks/endpoints/${await endpointId()}/deliveries/${webhookId}`)).body as DeliveryBody;
  const create = (id: number) => request(`${server.url}/plants`, { body: `{"id":${id},"name":"plant ${id}"}` });
  const createAll = async (ids: number[]) => {
    const answers = await Promise.all(ids.map(create));
    expect(answers.map((answer) => answer.status)).toEqual(ids.map(() => 200));
  };
  const metric = async (name: string) => {
    const text = (await request(`${server.url}/metrics`, { method: 'GET', auth: `Bearer ${TEST_METRICS_TOKEN}` })).text;
    return Number(new RegExp(`^${name.replace(/[{}"]/g, '\\$&')} (\\S+)$`, 'm').exec(text)?.[1] ?? 0);
  };

  beforeEach(async () => {
    receiver = new WebhookReceiver([secret]);
    await receiver.start();
  });
  afterEach(async () => {
    await receiver.stop();
    await server?.destroy();
    await schema?.drop();
  });

  it('should keep sending the other events while each failed one (500) waits for its own retry', async () => {
    // Every fifth of the first 40 plants' first attempt gets a 500; its retry is due an hour (±20 %) later.
    const fails = (id: number) => id % 5 === 0 && id <= 40;
    receiver.answerWith((got) => (fails(plantId(got)) && got.attempt === 1 ? 500 : 200));
    await start({ WEBHOOK_RETRY_SCHEDULE: '1h' });
    const accepted = () =>
      receiver
        .accepted()
        .map(plantId)
        .sort((x, y) => x - y);
    const ids = Array.from({ length: 40 }, (_, i) => i + 1);
    await createAll(ids);
    // Every other event is delivered while the failed ones wait for a retry that cannot have come yet:
    // nothing waited behind a failure (or it would wait the hour).
    const refused = () => receiver.received.filter((got) => got.answered === 500);
    await receiver.waitFor(() => receiver.accepted().length >= 32 && refused().length >= 8, 15_000);
    expect(accepted()).toEqual(ids.filter((id) => !fails(id)));
    const failed = refused();
    expect(failed.map(plantId).sort((x, y) => x - y)).toEqual(ids.filter(fails));
    // Each failed one is pending on its own schedule: its next attempt due at least 48 min after its first.
    for (const got of failed) {
      // The receiver has answered; the service records the result a moment later.
      await eventually(async () => (await delivery(got.webhookId)).attemptLog?.length === 1, 15_000);
      const { status, attemptLog, nextAttemptAt } = await delivery(got.webhookId);
      expect([status, attemptLog!.map((attempt) => attempt.responseStatus)]).toEqual(['pending', [500]]);
      expect(Date.parse(nextAttemptAt!) - Date.parse(attemptLog![0].at)).toBeGreaterThanOrEqual(0.8 * 3_600_000);
    }
    // Events that come once the failures are recorded are sent too: the endpoint is not held for them.
    const later = Array.from({ length: 10 }, (_, i) => 41 + i);
    await createAll(later);
    await receiver.waitFor(() => receiver.accepted().length >= 42, 15_000);
    expect(accepted()).toEqual([...ids, ...later].filter((id) => !fails(id)));
    // A 500 is about its event: the endpoint was never throttled.
    expect(server.logs.join('\n')).not.toContain('Throttled webhook endpoint');
    expect(await metric('plant_store_webhook_endpoints_throttled')).toBe(0);
  });

  it('should fail every delivery of a receiver that always answers 500 after its whole schedule, none stuck behind a pause', async () => {
    receiver.answerWith(() => 500);
    await start({ WEBHOOK_RETRY_SCHEDULE: '300ms,300ms' });
    await createAll(Array.from({ length: 10 }, (_, i) => i + 1));
    await eventually(async () => (await deliveries('failed')).length === 10, 30_000);
    expect(await deliveries('pending')).toEqual([]);
    expect((await deliveries('failed')).map((one) => one.attempts)).toEqual(Array.from({ length: 10 }, () => 3));
    expect(receiver.received).toHaveLength(30);
  });

  it('should disable the endpoint at once on 410 Gone, say so, count it and fail what it had pending', async () => {
    // Two events hang at the receiver (their deliveries pending, in flight); then a third gets 410.
    receiver.answerWith((got) => (plantId(got) === 1 ? 410 : 'hang'));
    await start({ WEBHOOK_RETRY_SCHEDULE: '100ms' });
    await createAll([2, 3]);
    await receiver.waitFor(() => receiver.received.length === 2);
    await createAll([1]);
    const id = await endpointId();
    await eventually(
      async () => ((await admin(`/webhooks/endpoints/${id}`)).body as { disabled: boolean }).disabled,
      15_000,
    );
    expect((await admin(`/webhooks/endpoints/${id}`)).body).toMatchObject({
      disabled: true,
      disabledReason: 'The receiver answered 410 Gone: it asked for no more deliveries',
    });
    expect(await metric('plant_store_webhook_endpoints_disabled_total')).toBe(1);
    expect(server.logs).toContainEqual(
      expect.stringMatching(
        new RegExp(`^Disabled webhook endpoint ${id} \\(127.0.0.1:${receiver.port}\\): the receiver answered 410 Gone`),
      ),
    );
    expect((await deliveries('failed')).map((one) => one.attempts).sort()).toEqual([0, 0, 1]);
    // Disabled: a new plant makes no delivery for it, and nothing more is sent.
    await createAll([4]);
    expect(await deliveries()).toHaveLength(3);
    expect(receiver.received).toHaveLength(3);
  });

  it("should hold every delivery of the endpoint for a 429's Retry-After, and then send them all", async () => {
    receiver.answerWith((got) =>
      plantId(got) === 1 && got.attempt === 1 ? { status: 429, headers: { 'retry-after': '3' } } : 200,
    );
    // The schedule alone would retry after 100 ms.
    await start({ WEBHOOK_RETRY_SCHEDULE: '100ms,100ms' });
    await createAll([1]);
    await eventually(async () => (await deliveries())[0]?.attempts === 1, 15_000);
    const limitedAt = receiver.received[0].receivedAt;
    await createAll([2, 3]);
    await receiver.waitFor(() => receiver.accepted().length === 3, 15_000);
    expect(`${plantId(receiver.received[0])}:${receiver.received[0].attempt}`).toBe('1:1');
    expect(
      receiver.received
        .slice(1)
        .map((got) => `${plantId(got)}:${got.attempt}`)
        .sort(),
    ).toEqual(['1:2', '2:1', '3:1']);
    // Nothing came before the receiver said (3 s after its answer; the answer left it after `limitedAt`).
    for (const got of receiver.received.slice(1)) expect(got.receivedAt - limitedAt).toBeGreaterThanOrEqual(3000);
    const [retried] = receiver.received;
    // The receiver has answered; the service records the result a moment later.
    const statuses = async () =>
      (await delivery(retried.webhookId)).attemptLog!.map((attempt) => attempt.responseStatus);
    await eventually(async () => (await statuses()).length === 2, 15_000);
    expect(await statuses()).toEqual([429, 200]);
  });

  it('should throttle an endpoint after five endpoint answers in a row, show it, and bring it back on a 2xx', async () => {
    receiver.answerWith(() => 502);
    await start({ WEBHOOK_RETRY_SCHEDULE: '100ms,100ms,100ms,100ms,100ms,100ms,100ms,100ms,100ms,100ms' });
    await createAll([1, 2, 3]);
    const id = await endpointId();
    const entered = new RegExp(
      `^Throttled webhook endpoint ${id} \\(127.0.0.1:${receiver.port}\\): 5 answers in a row said it is overloaded`,
    );
    await eventually(() => server.logs.some((line) => entered.test(line)), 15_000);
    expect(await metric('plant_store_webhook_endpoints_throttled')).toBe(1);
    // One probe at a time from now on.
    const sentSoFar = receiver.received.length;
    receiver.answerWith(() => ({ status: 200, delayMs: 300 }));
    await receiver.waitFor(() => receiver.accepted().length === 3, 15_000);
    expect(receiver.overlaps).toEqual([]);
    const afterRecovery = receiver.received.slice(sentSoFar);
    expect(afterRecovery[1].receivedAt - afterRecovery[0].receivedAt).toBeGreaterThanOrEqual(300);
    await eventually(() =>
      server.logs.some((line) => line.includes(`Webhook endpoint ${id} (127.0.0.1:${receiver.port}) recovered`)),
    );
    await eventually(async () => (await metric('plant_store_webhook_endpoints_throttled')) === 0, 5000);
    // The log names the host only, never the path.
    expect(server.logs.join('\n')).not.toContain('/hooks/plants');
  });
});
