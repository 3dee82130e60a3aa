import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { request, RequestOptions } from '../support/http';
import { ShutdownSignal } from '../../src/lifecycle/shutdown-signal';
import { createTestSchema, describeOnEachStore, TestSchema } from '../support/postgres';
import { eventually } from '../support/eventually';
import { createTestApp, TEST_METRICS_TOKEN, TestApp } from '../support/test-app';
import { LOOPBACK_NETWORKS, makeSecret, WebhookReceiver } from '../support/webhook-receiver';

const ADMIN = 'admin-token-0123456789abcdef';
const BLOCKED =
  'url must not point to a private or special-purpose address; an operator can open its range with WEBHOOK_ALLOWED_NETWORKS';

interface EndpointBody {
  id: string;
  url: string;
  description: string;
  disabled: boolean;
  disabledReason?: string;
  source: string;
  secret?: string;
  createdAt: string;
}

describeOnEachStore('webhook endpoints (e2e on %s, receivers on 127.0.0.1)', (postgres) => {
  let server: TestApp;
  let schema: TestSchema | undefined;
  const receivers: WebhookReceiver[] = [];

  const start = async (env: Record<string, string> = {}) => {
    schema = postgres ? await createTestSchema() : undefined;
    server = await createTestApp({
      ...(schema ? { DATABASE_URL: schema.url } : {}),
      ADMIN_TOKENS: ADMIN,
      // The receivers are on loopback, which the default blocks.
      WEBHOOK_ALLOWED_NETWORKS: LOOPBACK_NETWORKS,
      WEBHOOK_TIMEOUT_MS: '2000',
      WEBHOOK_RETRY_SCHEDULE: '100ms,100ms,100ms',
      WEBHOOK_POLL_INTERVAL_MS: '50',
      ...env,
    });
  };
  const admin = (path: string, options: RequestOptions = {}) =>
    request(`${server.url}${path}`, { method: 'GET', auth: `Bearer ${ADMIN}`, ...options });
  const receiver = async (secrets: string[] = []) => {
    const made = new WebhookReceiver(secrets);
    await made.start();
    receivers.push(made);
    return made;
  };
  /** Adds an endpoint for `target`, and has the receiver verify with the secret the API gave. */
  const subscribe = async (target: WebhookReceiver, extra: Record<string, unknown> = {}) => {
    const { status, body } = await admin('/webhooks/endpoints', {
      method: 'POST',
      body: { url: target.url, ...extra },
    });
    expect(status).toBe(201);
    const endpoint = body as EndpointBody;
    target.trust(endpoint.secret!);
    return endpoint;
  };
  const create = (id: number | string, name = `plant ${id}`) =>
    request(`${server.url}/plants`, { body: `{"id":${id},"name":"${name}"}` });

  /** Set while the tests share one service (each refused request leaves nothing behind): afterAll stops it. */
  let shared = false;
  const stop = async () => {
    await server?.destroy();
    await schema?.drop();
  };
  afterEach(async () => {
    for (const made of receivers.splice(0)) await made.stop();
    if (!shared) await stop();
  });

  it('should need the admin permission: 403 with the scope for any other valid token, 401 without one', async () => {
    await start();
    const refused = await request(`${server.url}/webhooks/endpoints`, { method: 'GET' });
    expect(refused.status).toBe(403);
    expect(refused.body).toEqual({
      error: 403,
      message: 'This needs the admin permission: a token of ADMIN_TOKENS, or a JWT whose scope holds webhooks:manage',
    });
    expect(refused.headers.get('www-authenticate')).toBe(
      'Bearer realm="plant-store", error="insufficient_scope", scope="webhooks:manage"',
    );
    expect((await request(`${server.url}/webhooks/endpoints`, { method: 'GET', auth: false })).status).toBe(401);
    expect((await admin('/webhooks/endpoints')).status).toBe(200);
    // The admin token is accepted on /plants too.
    expect(
      (await request(`${server.url}/plants`, { body: '{"id":1,"name":"a"}', auth: `Bearer ${ADMIN}` })).status,
    ).toBe(200);
  });

  it('should create, list in pages, read, change and delete endpoints, with a secret of their own', async () => {
    await start();
    const created = await admin('/webhooks/endpoints', {
      method: 'POST',
      body: { url: 'http://127.0.0.1:9/a', description: 'first' },
    });
    expect(created.status).toBe(201);
    const first = created.body as EndpointBody;
    expect(first).toMatchObject({ url: 'http://127.0.0.1:9/a', description: 'first', disabled: false, source: 'api' });
    expect(first.id).toMatch(/^ep_[0-9a-f]+$/);
    expect(first.secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(created.headers.get('location')).toBe(`/webhooks/endpoints/${first.id}`);
    const second = (await admin('/webhooks/endpoints', { method: 'POST', body: { url: 'http://127.0.0.1:9/b' } }))
      .body as EndpointBody;
    expect(second.secret).not.toBe(first.secret);
    expect((await admin('/webhooks/endpoints', { method: 'POST', body: { url: 'http://127.0.0.1:9/a' } })).status).toBe(
      409,
    );

    const page = await admin('/webhooks/endpoints?limit=1');
    expect((page.body as EndpointBody[]).map((e) => e.id)).toEqual([first.id]);
    expect(page.headers.get('link')).toBe(`</webhooks/endpoints?limit=1&after=${first.id}>; rel="next"`);
    expect(page.text).not.toContain('whsec_');
    const next = await admin(`/webhooks/endpoints?limit=1&after=${first.id}`);
    expect((next.body as EndpointBody[]).map((e) => e.id)).toEqual([second.id]);
    expect(next.headers.get('link')).toBeNull();

    expect((await admin(`/webhooks/endpoints/${first.id}/secret`)).body).toEqual({ secret: first.secret });
    const changed = await admin(`/webhooks/endpoints/${first.id}`, {
      method: 'PATCH',
      body: { description: 'renamed', disabled: true },
    });
    expect(changed.body).toMatchObject({ id: first.id, description: 'renamed', disabled: true });
    expect((await admin(`/webhooks/endpoints/${first.id}`)).body).toMatchObject({ description: 'renamed' });
    expect((await admin(`/webhooks/endpoints/${first.id}`, { method: 'DELETE' })).status).toBe(204);
    expect((await admin(`/webhooks/endpoints/${first.id}`)).status).toBe(404);
    expect((await admin(`/webhooks/endpoints/${first.id}`, { method: 'DELETE' })).status).toBe(404);
  });

  it('should refuse an endpoint on loopback without WEBHOOK_ALLOWED_NETWORKS (400 naming it), and save it with', async () => {
    const target = await receiver();
    await start({ WEBHOOK_ALLOWED_NETWORKS: '' }); // empty: unset, none
    for (const url of [target.url, `http://[::1]:${target.port}/x`, `http://2130706433:${target.port}/x`]) {
      const refused = await admin('/webhooks/endpoints', { method: 'POST', body: { url } });
      expect({ status: refused.status, body: refused.body }).toEqual({
        status: 400,
        body: { error: 400, message: BLOCKED },
      });
    }
    expect((await admin('/webhooks/endpoints')).body).toEqual([]);
    await server.destroy();
    await schema?.drop();

    await start({ WEBHOOK_ALLOWED_NETWORKS: '127.0.0.0/8' });
    const endpoint = await subscribe(target);
    expect(endpoint).toMatchObject({ url: target.url, source: 'api' });
    expect((await create(1)).status).toBe(200);
    await target.waitFor(() => target.received.length === 1);
    expect(target.received[0].verifiedBy).toEqual([0]);
    const refused = await admin('/webhooks/endpoints', {
      method: 'POST',
      body: { url: `http://[::1]:${target.port}/x` },
    });
    expect({ status: refused.status, body: refused.body }).toEqual({
      status: 400,
      body: { error: 400, message: BLOCKED },
    });
  });

  it('should warn at start-up about each saved endpoint that the blocked networks now refuse, by id and origin', async () => {
    await start();
    const saved = async (url: string, disabled = false) =>
      ((await admin('/webhooks/endpoints', { method: 'POST', body: { url, disabled } })).body as EndpointBody).id;
    const loopback = await saved('http://127.0.0.1:9/hooks?token=hunter2');
    const ipv6 = await saved('http://[::1]:9/hooks');
    await saved('http://8.8.8.8:9/hooks', true); // public: no warning (disabled: the test sends nowhere outside)
    await server.close();
    // The same store, without the allow-list the endpoints were saved under.
    server = await createTestApp(
      {
        ...(schema ? { DATABASE_URL: schema.url } : {}),
        ADMIN_TOKENS: ADMIN,
        WEBHOOK_ALLOWED_NETWORKS: '',
        WEBHOOK_RETRY_SCHEDULE: '50ms',
        WEBHOOK_POLL_INTERVAL_MS: '50',
      },
      server.dataDir,
    );
    const warnings = () => server.logs.filter((line) => line.startsWith('Endpoint '));
    await eventually(() => warnings().length === 2);
    const open = 'its sends fail until an operator opens its range with WEBHOOK_ALLOWED_NETWORKS';
    expect(warnings().sort()).toEqual(
      [
        `Endpoint ${loopback} (http://127.0.0.1:9) is a private or special-purpose address: ${open} (e.g. 127.0.0.1/32) or its url changes`,
        `Endpoint ${ipv6} (http://[::1]:9) is a private or special-purpose address: ${open} (e.g. ::1/128) or its url changes`,
      ].sort(),
    );
    expect(server.logs.join('\n')).not.toContain('hunter2');
    // And its sends fail, saying so.
    expect((await create(1)).status).toBe(200);
    const failed = async () =>
      (await admin(`/webhooks/endpoints/${loopback}/deliveries?status=failed`)).body as {
        lastAttempt: { error: string };
      }[];
    await eventually(async () => (await failed()).length === 1);
    expect((await failed())[0].lastAttempt.error).toBe(
      '127.0.0.1 is a blocked address; not connecting (an operator can open its range with WEBHOOK_ALLOWED_NETWORKS)',
    );
  });

  it('should refuse a name that resolves to a blocked address when saved, and at send time', async () => {
    const target = await receiver();
    await start({
      WEBHOOK_ALLOWED_NETWORKS: '', // empty: unset, none
      // Declared in configuration (a name is not checked at start-up): the send's connection is refused.
      WEBHOOK_URLS: `http://localhost:${target.port}/hooks/plants`,
      WEBHOOK_SECRET: makeSecret(),
      WEBHOOK_RETRY_SCHEDULE: '50ms',
    });
    const saved = await admin('/webhooks/endpoints', {
      method: 'POST',
      body: { url: `http://localhost:${target.port}/x` },
    });
    expect(saved).toMatchObject({
      status: 400,
      body: {
        message:
          'url must not resolve to a private or special-purpose address (localhost does); ' +
          'an operator can open its range with WEBHOOK_ALLOWED_NETWORKS',
      },
    });
    await create(1);
    const [configured] = (await admin('/webhooks/endpoints')).body as EndpointBody[];
    await eventually(async () => {
      const log = (await admin(`/webhooks/endpoints/${configured.id}/deliveries?status=failed`)).body as unknown[];
      return log.length === 1;
    });
    const [delivery] = (await admin(`/webhooks/endpoints/${configured.id}/deliveries`)).body as {
      lastAttempt: { error: string };
    }[];
    expect(delivery.lastAttempt.error).toBe(
      'localhost resolves to a blocked address; not connecting (an operator can open its range with WEBHOOK_ALLOWED_NETWORKS)',
    );
    expect(target.received).toHaveLength(0);
  });

  it('should keep endpoints of WEBHOOK_URLS read-only (409), and give their deliveries a log, resend and recover', async () => {
    const secret = makeSecret();
    const target = await receiver([secret]);
    target.answerWith(() => 503);
    await start({ WEBHOOK_URLS: target.url, WEBHOOK_SECRET: secret, WEBHOOK_RETRY_SCHEDULE: '50ms' });
    const [configured] = (await admin('/webhooks/endpoints')).body as EndpointBody[];
    expect(configured).toMatchObject({ url: target.url, source: 'config' });
    for (const [method, path, body] of [
      ['PATCH', '', { description: 'x' }],
      ['DELETE', '', undefined],
      ['POST', '/secret/rotate', {}],
    ] as const) {
      const answer = await admin(`/webhooks/endpoints/${configured.id}${path}`, { method, body });
      expect(answer.status).toBe(409);
      expect((answer.body as { message: string }).message).toContain('WEBHOOK_URLS');
    }
    expect((await create('9223372036854775807', 'max')).status).toBe(200);
    const log = `/webhooks/endpoints/${configured.id}/deliveries`;
    await eventually(async () => ((await admin(`${log}?status=failed`)).body as unknown[]).length === 1);
    const [failed] = (await admin(log)).body as { id: string }[];
    const detail = await admin(`${log}/${failed.id}`);
    // The payload keeps its exact int64.
    expect(detail.text).toContain('"payload":{"id":9223372036854775807,"name":"max"}');
    expect(detail.body).toMatchObject({
      id: failed.id,
      endpointId: configured.id,
      eventType: 'plant.created',
      status: 'failed',
      attempts: 2,
      lastAttempt: { responseStatus: 503 },
      attemptLog: [{ responseStatus: 503 }, { responseStatus: 503 }],
    });
    // The receiver is back: resend the one delivery, same webhook-id.
    target.answerWith(() => 200);
    const resent = await admin(`${log}/${failed.id}/resend`, { method: 'POST' });
    expect(resent.status).toBe(202);
    expect(resent.body).toMatchObject({ id: failed.id, status: 'pending' });
    await eventually(
      async () => ((await admin(`${log}/${failed.id}`)).body as { status: string }).status === 'succeeded',
    );
    expect(target.accepted().map((got) => got.webhookId)).toEqual([failed.id]);
    expect((await admin(`${log}/msg_none/resend`, { method: 'POST' })).status).toBe(404);
    expect((await admin(`/webhooks/endpoints/ep_none/deliveries`)).status).toBe(404);
    expect((await admin(`${log}?status=lost`)).status).toBe(400);
    // Recover: a second failure, then everything failed since a minute ago is queued again.
    target.answerWith(() => 503);
    await create(2);
    await eventually(async () => ((await admin(`${log}?status=failed`)).body as unknown[]).length === 1);
    target.answerWith(() => 200);
    const since = new Date(Date.now() - 60_000).toISOString();
    const recovered = await admin(`/webhooks/endpoints/${configured.id}/recover`, { method: 'POST', body: { since } });
    expect(recovered).toMatchObject({ status: 202, body: { queued: 1 } });
    await eventually(async () => ((await admin(`${log}?status=succeeded`)).body as unknown[]).length === 2);
    expect(
      (await admin(`/webhooks/endpoints/${configured.id}/recover`, { method: 'POST', body: { since: 'yesterday' } }))
        .status,
    ).toBe(400);
  });

  it('should give a recovered or resent delivery the whole retry schedule again, its attempts the total of its log', async () => {
    const refusing = await receiver();
    refusing.answerWith(() => 500);
    await start(); // WEBHOOK_RETRY_SCHEDULE 100ms,100ms,100ms: four attempts, then failed
    const endpoint = await subscribe(refusing);
    const log = `/webhooks/endpoints/${endpoint.id}/deliveries`;
    const failed = async () => (await admin(`${log}?status=failed`)).body as { id: string; attempts: number }[];
    /** How many requests the receiver got for each webhook-id, in the order of `ids`. */
    const tries = (ids: string[]) => ids.map((id) => refusing.received.filter((got) => got.webhookId === id).length);
    await create(1);
    await create(2);
    await eventually(async () => (await failed()).length === 2, 10_000);
    const ids = (await failed()).map((delivery) => delivery.id);
    expect(tries(ids)).toEqual([4, 4]);

    const since = new Date(Date.now() - 60_000).toISOString();
    const recovered = await admin(`/webhooks/endpoints/${endpoint.id}/recover`, { method: 'POST', body: { since } });
    expect(recovered).toMatchObject({ status: 202, body: { queued: 2 } });
    await eventually(async () => (await failed()).length === 2 && tries(ids).every((n) => n === 8), 10_000);
    await sleep(300); // time for a ninth attempt, if the schedule gave one
    expect(tries(ids)).toEqual([8, 8]);
    for (const id of ids) {
      const detail = (await admin(`${log}/${id}`)).body as { status: string; attempts: number; attemptLog: unknown[] };
      expect([detail.status, detail.attempts, detail.attemptLog.length]).toEqual(['failed', 8, 8]);
    }

    expect((await admin(`${log}/${ids[0]}/resend`, { method: 'POST' })).status).toBe(202);
    await eventually(async () => (await failed()).length === 2 && tries(ids)[0] === 12, 10_000);
    await sleep(300);
    expect(tries(ids)).toEqual([12, 8]);
    expect((await admin(`${log}/${ids[0]}`)).body).toMatchObject({ status: 'failed', attempts: 12 });
  });

  it('should answer a recover 503 once shutdown has begun, leaving the failed deliveries for a recover elsewhere', async () => {
    const refusing = await receiver();
    refusing.answerWith(() => 500);
    await start({ WEBHOOK_RETRY_SCHEDULE: '50ms' });
    const endpoint = await subscribe(refusing);
    await create(1);
    const log = `/webhooks/endpoints/${endpoint.id}/deliveries`;
    await eventually(async () => ((await admin(`${log}?status=failed`)).body as unknown[]).length === 1, 10_000);
    server.app.get(ShutdownSignal).raise();
    const since = new Date(Date.now() - 60_000).toISOString();
    const answer = await admin(`/webhooks/endpoints/${endpoint.id}/recover`, { method: 'POST', body: { since } });
    expect([answer.status, answer.body]).toEqual([
      503,
      {
        error: 503,
        message:
          `The service is shutting down: the recover of webhook endpoint ${endpoint.id} stopped after making 0 failed ` +
          'deliveries pending. Call recover again (on another instance, or after the restart) to queue the rest',
      },
    ]);
    expect(((await admin(`${log}?status=failed`)).body as unknown[]).length).toBe(1);
  });

  it('should sign each endpoint with its own secret only, and both secrets during a rotation overlap', async () => {
    const a = await receiver();
    const b = await receiver();
    await start({ WEBHOOK_SECRET_OVERLAP: '1h' });
    const endpointA = await subscribe(a);
    await subscribe(b);
    await create(1);
    await a.waitFor(() => a.received.length === 1 && b.received.length === 1);
    expect(a.received[0].verifiedBy).toEqual([0]);
    expect(b.received[0].verifiedBy).toEqual([0]);
    expect(a.received[0].webhookId).toBe(b.received[0].webhookId);
    // A receiver that knows only the other endpoint's secret verifies nothing.
    const crossed = new WebhookReceiver([endpointA.secret!]);
    expect(crossed.verifies(b.received[0])).toBe(false);

    const rotated = await admin(`/webhooks/endpoints/${endpointA.id}/secret/rotate`, { method: 'POST', body: {} });
    expect(rotated.status).toBe(200);
    const { secret: next } = rotated.body as { secret: string };
    expect(next).not.toBe(endpointA.secret);
    expect((await admin(`/webhooks/endpoints/${endpointA.id}/secret`)).body).toEqual({ secret: next });
    a.trust(next);
    await create(2);
    await a.waitFor(() => a.received.length === 2);
    expect(a.received[1].verifiedBy).toEqual([0, 1]); // old and new
    expect(a.received[1].signature.split(' ')).toHaveLength(2);
    const given = makeSecret();
    expect(
      (await admin(`/webhooks/endpoints/${endpointA.id}/secret/rotate`, { method: 'POST', body: { secret: 'nope' } }))
        .status,
    ).toBe(400);
    expect(
      (await admin(`/webhooks/endpoints/${endpointA.id}/secret/rotate`, { method: 'POST', body: { secret: given } }))
        .body,
    ).toEqual({ secret: given });
  });

  it('should send nothing more to a disabled or deleted endpoint, even what was queued for it', async () => {
    const hanging = await receiver();
    hanging.answerWith(() => 503);
    await start({ WEBHOOK_RETRY_SCHEDULE: '300ms,300ms,300ms' });
    const endpoint = await subscribe(hanging);
    await create(1);
    await hanging.waitFor(() => hanging.received.length === 1);
    await admin(`/webhooks/endpoints/${endpoint.id}`, { method: 'PATCH', body: { disabled: true } });
    await create(2); // committed while disabled: no delivery
    await sleep(1200);
    expect(hanging.received).toHaveLength(1);
    const log = (await admin(`/webhooks/endpoints/${endpoint.id}/deliveries`)).body as unknown[];
    expect(log).toHaveLength(1);
    await admin(`/webhooks/endpoints/${endpoint.id}`, { method: 'DELETE' });
    expect(hanging.received).toHaveLength(1);
  });

  it('should disable an endpoint that keeps failing for WEBHOOK_DISABLE_AFTER, loudly, and bring its events back after PATCH and recover', async () => {
    const dead = await receiver();
    dead.answerWith(() => 500);
    await start({
      WEBHOOK_DISABLE_AFTER: '1s',
      // Attempts for about 2 s, so the endpoint is still failing when WEBHOOK_DISABLE_AFTER (1 s) runs out
      // (a 500 no longer pauses the endpoint, so the schedule alone spaces them).
      WEBHOOK_RETRY_SCHEDULE: Array(20).fill('100ms').join(','),
    });
    const endpoint = await subscribe(dead);
    await create(1);
    await create(2);
    await eventually(
      async () => ((await admin(`/webhooks/endpoints/${endpoint.id}`)).body as EndpointBody).disabled,
      10_000,
    );
    const disabled = (await admin(`/webhooks/endpoints/${endpoint.id}`)).body as EndpointBody;
    expect(disabled.disabledReason).toBe(
      'No successful delivery for 1s while deliveries kept failing (WEBHOOK_DISABLE_AFTER)',
    );
    expect(server.logs).toContainEqual(
      expect.stringContaining(`Disabled webhook endpoint ${endpoint.id} (127.0.0.1:${dead.port})`),
    );
    const metrics = (await request(`${server.url}/metrics`, { method: 'GET', auth: `Bearer ${TEST_METRICS_TOKEN}` }))
      .text;
    expect(metrics).toMatch(/^plant_store_webhook_endpoints_disabled_total 1$/m);
    const log = `/webhooks/endpoints/${endpoint.id}/deliveries`;
    expect(((await admin(`${log}?status=failed`)).body as unknown[]).length).toBe(2);
    dead.answerWith(() => 200);
    const enabled = await admin(`/webhooks/endpoints/${endpoint.id}`, { method: 'PATCH', body: { disabled: false } });
    expect(enabled.body).not.toHaveProperty('disabledReason');
    const since = new Date(Date.now() - 60_000).toISOString();
    expect(
      (await admin(`/webhooks/endpoints/${endpoint.id}/recover`, { method: 'POST', body: { since } })).body,
    ).toEqual({
      queued: 2,
    });
    await dead.waitFor(() => dead.accepted().length === 2);
    expect(new Set(dead.accepted().map((got) => got.body))).toEqual(
      new Set(['{"id":1,"name":"plant 1"}', '{"id":2,"name":"plant 2"}']),
    );
  });

  it('should let a healthy endpoint hear of each create while another endpoint hangs, which holds its cap of sends and no more', async () => {
    const hanging = await receiver();
    hanging.answerWith(() => 'hang');
    const healthy = await receiver();
    // The hanging endpoint's sends cannot time out during the test, and no poll comes in it: each
    // delivery to the healthy endpoint is sent on its create's wake-up, past the hanging one's sends.
    await start({ WEBHOOK_TIMEOUT_MS: '600000', WEBHOOK_RETRY_SCHEDULE: '5s', WEBHOOK_POLL_INTERVAL_MS: '3600000' });
    await subscribe(hanging);
    await subscribe(healthy);
    const creates = 40; // more than the per-endpoint cap (WEBHOOK_ENDPOINT_CONCURRENCY, 16)
    for (let i = 1; i <= creates; i++) expect((await create(i)).status).toBe(200);
    await healthy.waitFor(() => healthy.received.length === creates);
    expect(new Set(healthy.received.map((got) => got.body)).size).toBe(creates);
    // Meanwhile the hanging endpoint was sent its cap and no more, and holds it.
    expect(hanging.received.length).toBeLessThanOrEqual(16);
    await hanging.waitFor(() => hanging.received.length === 16);
  });
  it('should rotate with no body, an empty application/json body, or {}; POST /plants still needs one', async () => {
    await start();
    const { id } = (await admin('/webhooks/endpoints', { method: 'POST', body: { url: 'http://127.0.0.1:9/r' } }))
      .body as EndpointBody;
    const rotate = `/webhooks/endpoints/${id}/secret/rotate`;
    const secrets = new Set<string>();
    for (const options of [
      { method: 'POST' },
      { method: 'POST', body: '', headers: { 'content-type': 'application/json' } },
      { method: 'POST', body: '  ', headers: { 'content-type': 'application/json; charset=utf-8' } },
      { method: 'POST', body: {} },
    ]) {
      const answer = await admin(rotate, options);
      expect(answer.status).toBe(200);
      const { secret } = answer.body as { secret: string };
      expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
      secrets.add(secret);
      expect((await admin(`/webhooks/endpoints/${id}/secret`)).body).toEqual({ secret });
    }
    expect(secrets.size).toBe(4);
    expect((await admin(rotate, { method: 'POST', body: '[]' })).body).toEqual({
      error: 400,
      message: 'Request body must be a JSON object',
    });
    for (const body of [undefined, '']) {
      const plant = await request(`${server.url}/plants`, {
        body,
        headers: body === undefined ? {} : { 'content-type': 'application/json' },
      });
      expect({ status: plant.status, body: plant.body }).toEqual({
        status: 400,
        body: { error: 400, message: 'Request body is required: send a JSON object' },
      });
    }
  });

  it('should let an operator pause and resume a config endpoint, keep that (and the service disabling one) across restarts, and never serve its secret', async () => {
    const secret = makeSecret();
    const target = await receiver([secret]);
    const gone = await receiver([secret]);
    gone.answerWith(() => 500);
    const configured = {
      WEBHOOK_URLS: `${target.url},${gone.url}`,
      WEBHOOK_SECRET: secret,
      WEBHOOK_DISABLE_AFTER: '1s',
      // Attempts for about 2 s, so the endpoint is still failing when WEBHOOK_DISABLE_AFTER (1 s) runs out
      // (a 500 no longer pauses the endpoint, so the schedule alone spaces them).
      WEBHOOK_RETRY_SCHEDULE: Array(20).fill('100ms').join(','),
    };
    await start(configured);
    const byUrl = async () =>
      Object.fromEntries(((await admin('/webhooks/endpoints')).body as EndpointBody[]).map((e) => [e.url, e]));
    const { [target.url]: endpoint } = await byUrl();
    const path = `/webhooks/endpoints/${endpoint.id}`;
    for (const [method, suffix, body] of [
      ['GET', '/secret', undefined],
      ['POST', '/secret/rotate', undefined],
      ['POST', '/secret/rotate', { secret: makeSecret() }],
    ] as const) {
      expect((await admin(`${path}${suffix}`, { method, body })).body).toEqual({
        error: 409,
        message: `Endpoint ${endpoint.id} is declared in WEBHOOK_URLS: its secret is the operator's WEBHOOK_SECRET and is not served`,
      });
    }
    for (const body of [{ description: 'x' }, { url: 'http://127.0.0.1:9/x' }, { disabled: true, description: 'x' }]) {
      expect((await admin(path, { method: 'PATCH', body })).body).toEqual({
        error: 409,
        message: `Endpoint ${endpoint.id} is declared in WEBHOOK_URLS: it can only be changed by changing the configuration`,
      });
    }
    const paused = await admin(path, { method: 'PATCH', body: { disabled: true } });
    expect(paused).toMatchObject({ status: 200, body: { id: endpoint.id, source: 'config', disabled: true } });
    expect(paused.body).not.toHaveProperty('disabledReason');
    // The service disables the other one (no success for WEBHOOK_DISABLE_AFTER).
    expect((await create(1)).status).toBe(200);
    await eventually(async () => (await byUrl())[gone.url].disabled, 10_000);

    await server.close();
    server = await createTestApp(
      {
        ...(schema ? { DATABASE_URL: schema.url } : {}),
        ADMIN_TOKENS: ADMIN,
        WEBHOOK_ALLOWED_NETWORKS: '127.0.0.0/8,::1/128',
        WEBHOOK_POLL_INTERVAL_MS: '50',
        ...configured,
      },
      server.dataDir,
    );
    const after = await byUrl();
    expect(after[target.url]).toMatchObject({ id: endpoint.id, disabled: true });
    expect(after[target.url]).not.toHaveProperty('disabledReason');
    expect(after[gone.url]).toMatchObject({
      disabled: true,
      disabledReason: 'No successful delivery for 1s while deliveries kept failing (WEBHOOK_DISABLE_AFTER)',
    });
    // Paused: an event committed now makes no delivery for it.
    expect((await create(2)).status).toBe(200);
    expect((await admin(`${path}/deliveries`)).body).toEqual([]);
    expect(target.received).toHaveLength(0);

    const resumed = await admin(path, { method: 'PATCH', body: { disabled: false } });
    expect(resumed).toMatchObject({ status: 200, body: { disabled: false } });
    expect((await create(3)).status).toBe(200);
    await target.waitFor(() => target.received.length === 1);
    expect(target.received[0]).toMatchObject({ body: '{"id":3,"name":"plant 3"}', verifiedBy: [0] });
  });

  it('should refuse a url or description holding NUL with a 400 naming the field', async () => {
    await start();
    const cases: [string, Record<string, unknown>, string][] = [
      ['POST', { url: 'http://127.0.0.1:9/a', description: 'a\u0000b' }, 'description must not contain NUL (\\u0000)'],
      ['POST', { url: 'http://127.0.0.1:9/a\u0000' }, 'url must not contain NUL (\\u0000)'],
    ];
    for (const [method, body, message] of cases) {
      expect((await admin('/webhooks/endpoints', { method, body })).body).toEqual({ error: 400, message });
    }
    const { id } = (await admin('/webhooks/endpoints', { method: 'POST', body: { url: 'http://127.0.0.1:9/a' } }))
      .body as EndpointBody;
    expect(
      (await admin(`/webhooks/endpoints/${id}`, { method: 'PATCH', body: { description: '\u0000' } })).body,
    ).toEqual({ error: 400, message: 'description must not contain NUL (\\u0000)' });
    expect(
      (await admin(`/webhooks/endpoints/${id}`, { method: 'PATCH', body: { url: 'http://127.0.0.1:9/\u0000' } })).body,
    ).toEqual({ error: 400, message: 'url must not contain NUL (\\u0000)' });
    expect((await admin(`/webhooks/endpoints/${id}`)).body).toMatchObject({
      url: 'http://127.0.0.1:9/a',
      description: '',
    });
  });

  it('should cap API endpoints at WEBHOOK_MAX_ENDPOINTS, disabled ones counted, config ones not, under concurrent creates', async () => {
    const env = { WEBHOOK_MAX_ENDPOINTS: '3', WEBHOOK_URLS: 'http://127.0.0.1:9/config', WEBHOOK_SECRET: makeSecret() };
    await start(env);
    // PostgreSQL: half of the creates through a second instance on the same database.
    const second = postgres
      ? await createTestApp({
          DATABASE_URL: schema!.url,
          ADMIN_TOKENS: ADMIN,
          WEBHOOK_ALLOWED_NETWORKS: LOOPBACK_NETWORKS,
          ...env,
        })
      : undefined;
    try {
      const answers = await Promise.all(
        Array.from({ length: 12 }, (_, i) =>
          request(`${(i % 2 === 1 && second ? second : server).url}/webhooks/endpoints`, {
            auth: `Bearer ${ADMIN}`,
            body: { url: `http://127.0.0.1:9/${i}`, disabled: i % 3 === 0 },
          }),
        ),
      );
      const refused = answers.filter((answer) => answer.status === 409);
      expect(answers.filter((answer) => answer.status === 201)).toHaveLength(3);
      expect(refused).toHaveLength(9);
      expect(refused[0].body).toEqual({
        error: 409,
        message:
          'There are 3 API endpoints already, the most WEBHOOK_MAX_ENDPOINTS allows: delete one, or raise WEBHOOK_MAX_ENDPOINTS',
      });
      const listed = (await admin('/webhooks/endpoints')).body as EndpointBody[];
      expect(listed.filter((e) => e.source === 'api')).toHaveLength(3);
      expect(listed.filter((e) => e.source === 'config')).toHaveLength(1);
      // Disabling one frees nothing; deleting one does.
      const [oldest] = listed.filter((e) => e.source === 'api');
      await admin(`/webhooks/endpoints/${oldest.id}`, { method: 'PATCH', body: { disabled: true } });
      expect(
        (await admin('/webhooks/endpoints', { method: 'POST', body: { url: 'http://127.0.0.1:9/x' } })).status,
      ).toBe(409);
      expect((await admin(`/webhooks/endpoints/${oldest.id}`, { method: 'DELETE' })).status).toBe(204);
      expect(
        (await admin('/webhooks/endpoints', { method: 'POST', body: { url: 'http://127.0.0.1:9/x' } })).status,
      ).toBe(201);
    } finally {
      await second?.destroy();
    }
  });

  describe('refusing a request (one service for every case)', () => {
    beforeAll(async () => {
      shared = true;
      await start();
    });
    afterAll(async () => {
      shared = false;
      await stop();
    });

    it.each([
      [{ url: 'ftp://127.0.0.1/x' }, 'url must be an absolute http(s) URL'],
      [
        { url: 'http://user:pw@127.0.0.1/x' },
        'url must not hold credentials (user:password@); receivers verify the signature instead',
      ],
      [{ url: 'http://127.0.0.1/x#frag' }, 'url must not have a fragment (#…)'],
      [
        { url: `http://127.0.0.1/${'x'.repeat(2048)}`, description: 'a URL of 2,066 characters' },
        'url must be at most 2048 characters',
      ],
      [
        { url: `http://127.0.0.1/${'é'.repeat(400)}`, description: '417 characters, 2,417 once percent-encoded' },
        'url must be at most 2048 characters once normalised',
      ],
      [{ url: 'http://169.254.169.254/latest/meta-data' }, BLOCKED],
      [{ url: 'http://0xa9fea9fe/latest/meta-data' }, BLOCKED],
      [{ url: 'http://[::ffff:169.254.169.254]/latest/meta-data' }, BLOCKED],
      [{ url: 'http://[fd00:ec2::254]/latest/meta-data' }, BLOCKED],
      [{ url: 'http://[fe80::1]/x' }, BLOCKED],
      [{ url: 'http://10.0.0.1/x' }, BLOCKED],
      [{ url: 'http://[64:ff9b::a00:1]/x' }, BLOCKED],
      [{}, 'url is required'],
      [
        { url: 'http://127.0.0.1/x', description: 5, disabled: 'no' },
        'description must be a string; disabled must be true or false',
      ],
    ])('should refuse a body (%#) with a 400 naming the field: %p', async (body, message) => {
      const { status, body: answer } = await admin('/webhooks/endpoints', { method: 'POST', body });
      expect({ status, answer }).toEqual({ status: 400, answer: { error: 400, message } });
    });

    it.each([
      [{ since: '2026-01-01' }, 'since must be an RFC 3339 date-time'],
      [{ since: '1700000000' }, 'since must be an RFC 3339 date-time'],
      [{ since: 1700000000 }, 'since must be an RFC 3339 date-time'],
      [{ since: 'Jan 1 2026' }, 'since must be an RFC 3339 date-time'],
      [{ since: '2026-01-01T00:00:00' }, 'since must be an RFC 3339 date-time'],
      [{ since: '2026-02-30T00:00:00Z' }, 'since must be an RFC 3339 date-time'],
      [{ since: '2026-01-01T00:00:00Z', until: '2026-01-02' }, 'until must be an RFC 3339 date-time'],
    ])('should refuse recover %j: RFC 3339 date-times only', async (body, message) => {
      const { id } = (
        await admin('/webhooks/endpoints', { method: 'POST', body: { url: `http://127.0.0.1:9/${randomUUID()}` } })
      ).body as EndpointBody;
      expect((await admin(`/webhooks/endpoints/${id}/recover`, { method: 'POST', body })).body).toEqual({
        error: 400,
        message,
      });
      expect(
        (
          await admin(`/webhooks/endpoints/${id}/recover`, {
            method: 'POST',
            body: { since: '2026-01-01t00:00:00.123456+01:00', until: '2099-01-01T00:00:00Z' },
          })
        ).body,
      ).toEqual({ queued: 0 });
    });
  });
});
