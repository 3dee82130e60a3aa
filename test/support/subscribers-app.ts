import { eventually } from './eventually';
import { request, RequestOptions } from './http';
import { createTestSchema, TestSchema } from './postgres';
import { createTestApp, ModuleImport, TestApp } from './test-app';
import { LOOPBACK_NETWORKS, WebhookReceiver } from './webhook-receiver';

export const ADMIN = 'admin-token-0123456789abcdef';

/** A subscribed receiver and its endpoint, as the admin API answered it. */
export interface Subscriber {
  readonly receiver: WebhookReceiver;
  readonly endpoint: { id: string; secret: string; eventTypes: string[] };
}

/**
 * For each test of a suite on `postgres` or SQLite: an app with `features` besides plants, an admin
 * token, receivers on loopback allowed and a fast outbox poll; `subscribe` starts a receiver and adds
 * it as an endpoint through the admin API. `restart(env)` replaces the app with one on a fresh store
 * and `env` instead. Everything is stopped and dropped after each test.
 */
export function useSubscribersApp(postgres: boolean, features: (webhooks: ModuleImport) => ModuleImport[]) {
  let server: TestApp | undefined;
  let schema: TestSchema | undefined;
  const receivers: WebhookReceiver[] = [];
  const start = async (env: NodeJS.ProcessEnv) => {
    schema = postgres ? await createTestSchema() : undefined;
    server = await createTestApp({ ...(schema ? { DATABASE_URL: schema.url } : {}), ...env }, undefined, [], features);
  };
  const stop = async () => {
    await server?.destroy();
    await schema?.drop();
    server = schema = undefined;
  };
  beforeEach(() =>
    start({ ADMIN_TOKENS: ADMIN, WEBHOOK_ALLOWED_NETWORKS: LOOPBACK_NETWORKS, WEBHOOK_POLL_INTERVAL_MS: '50' }),
  );
  afterEach(async () => {
    await stop();
    await Promise.all(receivers.splice(0).map((receiver) => receiver.stop()));
  });

  const url = () => server!.url;
  const admin = (path: string, options: RequestOptions = {}) =>
    request(`${url()}${path}`, { method: 'GET', auth: `Bearer ${ADMIN}`, ...options });
  const subscribe = async (extra: Record<string, unknown> = {}): Promise<Subscriber> => {
    const receiver = new WebhookReceiver([]);
    await receiver.start();
    receivers.push(receiver);
    const { status, body } = await admin('/webhooks/endpoints', {
      method: 'POST',
      body: { url: receiver.url, ...extra },
    });
    expect(status).toBe(201);
    const endpoint = body as Subscriber['endpoint'];
    receiver.trust(endpoint.secret);
    return { receiver, endpoint };
  };
  const restart = async (env: NodeJS.ProcessEnv) => {
    await stop();
    await start(env);
  };
  /**
   * The endpoint's deliveries (newest first, up to 1000) once none is pending: every event committed
   * before the call is there, so an endpoint whose deliveries all succeeded is sent nothing more.
   */
  const settled = async (endpointId: string) => {
    const log = async () =>
      (await admin(`/webhooks/endpoints/${endpointId}/deliveries?limit=1000`)).body as {
        id: string;
        eventType: string;
        status: string;
        createdAt: string;
        payload: unknown;
      }[];
    await eventually(async () => (await log()).every((delivery) => delivery.status !== 'pending'));
    return log();
  };
  return { url, admin, subscribe, restart, settled };
}
