import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { request } from '../support/http';
import { createTestSchema, describePostgres, TestSchema } from '../support/postgres';
import { ServiceProcess, startService } from '../support/service-process';
import { makeSecret, ReceivedDelivery, WebhookReceiver } from '../support/webhook-receiver';

const TOKEN = 'webhook-answers-process-token';

const plantId = (got: ReceivedDelivery) => /"id":(-?\d+)/.exec(got.body)![1];

/** A receiver that fails one event in five twice (500) before it accepts it, and accepts the others at once. */
function pickyReceiver(secret: string): WebhookReceiver {
  return new WebhookReceiver([secret], (got) => (Number(plantId(got)) % 5 === 0 && got.attempt <= 2 ? 500 : 200));
}

/** The plant ids of the events the receiver accepted (2xx), once each, by webhook-id. */
function acceptedPlantIds(receiver: WebhookReceiver): string[] {
  const byWebhookId = new Map(receiver.accepted().map((got) => [got.webhookId, plantId(got)]));
  return [...byWebhookId.values()].sort();
}

/**
 * Creates `ids` ten at a time, round-robin over `instances` (a killed one refuses: not acknowledged),
 * calling `midway` once after half of them; resolves with the ids acknowledged with 200.
 */
async function createAcross(
  instances: () => ServiceProcess[],
  ids: number[],
  midway: () => Promise<void>,
): Promise<string[]> {
  const acknowledged: string[] = [];
  for (let i = 0; i < ids.length; i += 10) {
    if (i === ids.length / 2) await midway();
    await Promise.all(
      ids.slice(i, i + 10).map(async (id, j) => {
        const targets = instances();
        const target = targets[j % targets.length];
        const answer = await request(`${target.url}/plants`, {
          body: `{"id":${id},"name":"plant ${id}"}`,
          auth: `Bearer ${TOKEN}`,
        }).catch(() => undefined);
        if (answer?.status === 200) acknowledged.push(String(id));
      }),
    );
  }
  return acknowledged.sort();
}

const baseEnv = (secret: string, receiver: WebhookReceiver) => ({
  AUTH_TOKENS: TOKEN,
  WEBHOOK_URLS: receiver.url,
  WEBHOOK_SECRET: secret,
  WEBHOOK_ALLOWED_NETWORKS: '127.0.0.0/8,::1/128',
  WEBHOOK_TIMEOUT_MS: '1000',
  WEBHOOK_RETRY_SCHEDULE: '200ms,200ms,200ms',
  WEBHOOK_POLL_INTERVAL_MS: '100',
});

describe('a receiver failing 1 event in 5 twice, across a kill -9 (e2e, node dist/main.js, SQLite)', () => {
  const secret = makeSecret();
  let receiver: WebhookReceiver;
  let dir: string;
  let service: ServiceProcess | undefined;

  beforeEach(async () => {
    receiver = pickyReceiver(secret);
    await receiver.start();
    dir = mkdtempSync(join(tmpdir(), 'plant-store-answers-'));
  });
  afterEach(async () => {
    await receiver.stop();
    await service?.stop('SIGKILL');
    service = undefined;
    rmSync(dir, { recursive: true, force: true });
  });

  it('should lose nothing: every acknowledged create is received, the refused ones on a retry', async () => {
    const env = { ...baseEnv(secret, receiver), DATABASE_URL: `sqlite:${join(dir, 'plants.db')}`, DATA_DIR: dir };
    service = await startService(env);
    const ids = Array.from({ length: 100 }, (_, i) => i + 1);
    const acknowledged = await createAcross(
      () => (service ? [service] : []),
      ids,
      async () => {
        // Killed while deliveries and their retries are in flight, then started again on the same file.
        expect(await service!.stop('SIGKILL')).toBeNull();
        service = await startService(env);
      },
    );
    expect(acknowledged.length).toBe(ids.length);
    // Claims of the dead process run out after its lease (timeout + 5 s); then everything arrives.
    await receiver.waitFor(() => acceptedPlantIds(receiver).length === acknowledged.length, 60_000);
    expect(acceptedPlantIds(receiver)).toEqual(acknowledged);
    // The refused ones were sent again after each 500, not given up on.
    const refused = acknowledged.filter((id) => Number(id) % 5 === 0);
    for (const id of refused)
      expect(receiver.received.filter((got) => plantId(got) === id).length).toBeGreaterThanOrEqual(3);
  });
});

describePostgres(
  'a receiver failing 1 event in 5 twice, across a kill -9 of one of two instances (e2e, PostgreSQL)',
  () => {
    const secret = makeSecret();
    let receiver: WebhookReceiver;
    let schema: TestSchema;
    let instances: ServiceProcess[] = [];

    beforeEach(async () => {
      receiver = pickyReceiver(secret);
      await receiver.start();
      schema = await createTestSchema();
    });
    afterEach(async () => {
      await Promise.all(instances.map((instance) => instance.stop('SIGKILL')));
      instances = [];
      await receiver.stop();
      await schema.drop();
    });

    it('should lose nothing: every acknowledged create is received, the refused ones on a retry', async () => {
      const env = { ...baseEnv(secret, receiver), DATABASE_URL: schema.url, DATABASE_POOL_MAX: '5' };
      instances = await Promise.all([startService(env), startService(env)]);
      const ids = Array.from({ length: 100 }, (_, i) => i + 1);
      const acknowledged = await createAcross(
        () => instances,
        ids,
        async () => {
          // One instance dies with its claims; creates go on through the other while it starts again.
          const [killed, survivor] = instances;
          expect(await killed.stop('SIGKILL')).toBeNull();
          instances = [survivor];
          instances = [survivor, await startService(env)];
        },
      );
      expect(acknowledged.length).toBe(ids.length);
      await receiver.waitFor(() => acceptedPlantIds(receiver).length === acknowledged.length, 60_000);
      expect(acceptedPlantIds(receiver)).toEqual(acknowledged);
      // The refused ones were sent again after each 500, not given up on.
      const refused = acknowledged.filter((id) => Number(id) % 5 === 0);
      for (const id of refused)
        expect(receiver.received.filter((got) => plantId(got) === id).length).toBeGreaterThanOrEqual(3);
    });
  },
);
