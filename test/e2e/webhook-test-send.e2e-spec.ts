import { request } from '../support/http';
import { describeOnEachStore } from '../support/postgres';
import { ADMIN, useSubscribersApp } from '../support/subscribers-app';
import { LOOPBACK_NETWORKS } from '../support/webhook-receiver';

interface DeliveryBody {
  id: string;
  endpointId: string;
  eventType: string;
  payload: { type: string; timestamp: string; data: { endpointId: string } };
  status: string;
  attempts: number;
  createdAt: string;
  nextAttemptAt?: string;
}

describeOnEachStore('the test send (e2e on %s, receivers on 127.0.0.1)', (postgres) => {
  const { url, admin, subscribe, restart, settled } = useSubscribersApp(postgres, () => []);
  const test = (endpointId: string) => admin(`/webhooks/endpoints/${endpointId}/test`, { method: 'POST' });

  it('should answer 202 with the Delivery and send one signed webhook.test to that endpoint alone, retried, logged and resendable', async () => {
    await restart({
      ADMIN_TOKENS: ADMIN,
      WEBHOOK_ALLOWED_NETWORKS: LOOPBACK_NETWORKS,
      WEBHOOK_POLL_INTERVAL_MS: '50',
      WEBHOOK_RETRY_SCHEDULE: '100ms',
    });
    // Subscribed to plant.created only (the default): the test goes whatever its eventTypes.
    const target = await subscribe();
    const bystander = await subscribe();
    // The first attempt fails (500): the test send is retried on the schedule, as any delivery.
    target.receiver.answerWith((delivery) => (delivery.attempt === 1 ? 500 : 200));

    const answer = await test(target.endpoint.id);

    expect(answer.status).toBe(202);
    const delivery = answer.body as DeliveryBody;
    expect(delivery).toEqual({
      id: expect.stringMatching(/^msg_[0-9a-f]{32}$/),
      endpointId: target.endpoint.id,
      eventType: 'webhook.test',
      payload: { type: 'webhook.test', timestamp: delivery.createdAt, data: { endpointId: target.endpoint.id } },
      status: 'pending',
      attempts: 0,
      createdAt: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
      nextAttemptAt: expect.any(String),
    });
    const sent = `{"type":"webhook.test","timestamp":"${delivery.createdAt}","data":{"endpointId":"${target.endpoint.id}"}}`;
    await target.receiver.waitFor(() => target.receiver.accepted().length === 1);
    // Each attempt signed with the endpoint's secret, verified by standardwebhooks, under one webhook-id.
    expect(target.receiver.received.map(({ webhookId, body, verifiedBy }) => [webhookId, body, verifiedBy])).toEqual([
      [delivery.id, sent, [0]],
      [delivery.id, sent, [0]],
    ]);

    // In its delivery log, as sent; none for the other endpoint, whose deliveries are its own.
    const [logged] = await settled(target.endpoint.id);
    expect(logged).toMatchObject({ id: delivery.id, eventType: 'webhook.test', status: 'succeeded', attempts: 2 });
    expect(logged.payload).toEqual(delivery.payload);
    expect(await settled(bystander.endpoint.id)).toEqual([]);
    expect(bystander.receiver.received).toEqual([]);

    const resent = await admin(`/webhooks/endpoints/${target.endpoint.id}/deliveries/${delivery.id}/resend`, {
      method: 'POST',
    });
    expect(resent.status).toBe(202);
    await target.receiver.waitFor(() => target.receiver.accepted().length === 2);
    expect(target.receiver.received.at(-1)).toMatchObject({ webhookId: delivery.id, body: sent, verifiedBy: [0] });
  });

  it('should answer 404 for an unknown endpoint, 409 while it is disabled, and 403 to a plants token', async () => {
    const { endpoint, receiver } = await subscribe({ disabled: true });

    expect(await test('ep_0000000000000000000000000000')).toMatchObject({
      status: 404,
      body: { error: 404, message: 'No webhook endpoint with id ep_0000000000000000000000000000' },
    });
    expect(await test(endpoint.id)).toMatchObject({
      status: 409,
      body: {
        error: 409,
        message: `Webhook endpoint ${endpoint.id} is disabled and receives nothing: enable it first (PATCH /webhooks/endpoints/${endpoint.id} with {"disabled": false}), then send the test`,
      },
    });
    const plantsToken = await request(`${url()}/webhooks/endpoints/${endpoint.id}/test`, { method: 'POST' });
    expect(plantsToken.status).toBe(403);
    expect(plantsToken.body).toEqual({
      error: 403,
      message: 'This needs the admin permission: a token of ADMIN_TOKENS, or a JWT whose scope holds webhooks:manage',
    });
    // None of them wrote anything.
    expect((await admin(`/webhooks/endpoints/${endpoint.id}/deliveries`)).body).toEqual([]);

    // Enabled, it is sent.
    expect(
      (await admin(`/webhooks/endpoints/${endpoint.id}`, { method: 'PATCH', body: { disabled: false } })).status,
    ).toBe(200);
    expect(await test(endpoint.id)).toMatchObject({ status: 202, body: { eventType: 'webhook.test' } });
    await receiver.waitFor(() => receiver.accepted().length === 1);
  });

  it('should count a test toward the endpoint’s health: a 410 Gone disables it', async () => {
    const { endpoint, receiver } = await subscribe();
    receiver.answerWith(() => 410);
    expect((await test(endpoint.id)).status).toBe(202);
    const [delivery] = await settled(endpoint.id);
    expect(delivery).toMatchObject({ eventType: 'webhook.test', status: 'failed' });
    expect((await admin(`/webhooks/endpoints/${endpoint.id}`)).body).toMatchObject({
      disabled: true,
      disabledReason: expect.stringContaining('410'),
    });
  });

  it('should refuse to subscribe an endpoint to webhook.test (400), on create and on change', async () => {
    const { endpoint } = await subscribe();
    const message =
      'eventTypes holds "webhook.test", which no endpoint subscribes to: POST /webhooks/endpoints/{id}/test sends it to that endpoint alone';
    for (const [path, method, body] of [
      ['/webhooks/endpoints', 'POST', { url: 'http://127.0.0.1:9/other', eventTypes: ['webhook.test'] }],
      [`/webhooks/endpoints/${endpoint.id}`, 'PATCH', { eventTypes: ['plant.created', 'webhook.test'] }],
    ] as const) {
      const answer = await admin(path, { method, body });
      expect({ method, status: answer.status, body: answer.body }).toEqual({
        method,
        status: 400,
        body: { error: 400, message },
      });
    }
    expect(((await admin('/webhooks/endpoints')).body as { eventTypes: string[] }[]).map((e) => e.eventTypes)).toEqual([
      ['plant.created'],
    ]);
  });
});
