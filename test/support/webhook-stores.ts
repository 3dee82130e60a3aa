import { Database } from '../../src/database/database';
import { Transaction } from '../../src/database/transaction';
import { PLANTS_MIGRATIONS } from '../../src/plants/persistence/plants.migrations';
import { Plant } from '../../src/plants/plant';
import { EndpointIds } from '../../src/webhooks/endpoints/endpoint-ids';
import { newSecret } from '../../src/webhooks/endpoints/endpoints.service';
import { EndpointsStore } from '../../src/webhooks/endpoints/endpoints.store';
import { PLANT_CREATED } from '../../src/plants/plant-events';
import { OutboxWriter } from '../../src/webhooks/outbox.writer';
import { DeliveryLog } from '../../src/webhooks/persistence/delivery-log';
import { DispatchQueue } from '../../src/webhooks/persistence/dispatch-queue';
import { OutboxStore } from '../../src/webhooks/persistence/outbox.store';
import { SecretsCipher } from '../../src/webhooks/secrets/secrets-cipher';
import { SecretsColumn } from '../../src/webhooks/secrets/secrets-column';
import { SqlDeliveryLog } from '../../src/webhooks/persistence/sql-delivery-log';
import { SqlDispatchQueue } from '../../src/webhooks/persistence/sql-dispatch-queue';
import { SqlOutboxStore } from '../../src/webhooks/persistence/sql-outbox.store';
import { SqlEndpointsStore } from '../../src/webhooks/persistence/sql-endpoints.store';
import { WEBHOOK_MIGRATIONS } from '../../src/webhooks/persistence/webhooks.migrations';
import { useFreshDatabase } from './stores';

const MIGRATIONS = [...PLANTS_MIGRATIONS, ...WEBHOOK_MIGRATIONS];
const SECRETS_KEY = Buffer.alloc(32, 7).toString('base64');
const ids = new EndpointIds();
const newEndpointId = () => ids.next();

/** Endpoint secrets sealed under a test key; `configured` signs the config endpoints (WEBHOOK_SECRET). */
export const secretsColumn = (configured: string[] = []) =>
  new SecretsColumn(new SecretsCipher([SECRETS_KEY]), configured);

/** The webhook feature's stores on one database, as `WebhooksModule` wires them. */
export interface WebhookStores {
  readonly endpoints: EndpointsStore;
  readonly outbox: OutboxStore;
  readonly queue: DispatchQueue;
  readonly log: DeliveryLog;
}

export function webhookStores(database: Database, column = secretsColumn()): WebhookStores {
  const outbox = new SqlOutboxStore(database, database.kysely);
  return {
    endpoints: new SqlEndpointsStore(database, database.kysely, column),
    outbox,
    queue: new SqlDispatchQueue(database, database.kysely, column),
    log: new SqlDeliveryLog(database, database.kysely, outbox),
  };
}

/**
 * A fresh migrated store for each test (an SQLite file in a temporary folder, or a PostgreSQL schema
 * of its own), its webhook stores, and the helpers every webhook persistence suite uses.
 */
export function useWebhookStores(postgres: boolean) {
  const state = {} as WebhookStores & { database: Database; committed: number };
  const database = useFreshDatabase(postgres, MIGRATIONS, { poolMax: 4, queryTimeoutMs: 10_000 });

  beforeEach(() => {
    Object.assign(state, { database: database(), committed: 0, ...webhookStores(database()) });
  });
  afterEach(() => jest.restoreAllMocks());

  /** Runs `work` in a transaction of the store, as the plants' writes do. */
  const inTransaction = async (work: (transaction: Transaction) => unknown) => {
    await state.database.transaction('write the outbox', (tx) => work(tx));
  };

  return {
    stores: state,
    inTransaction,
    /**
     * Commits one `plant.created` per name in one transaction, as the plants' group commit publishes
     * them. The plants' ids count up from 2^53 + 1 (exact) through the test.
     */
    commit: async (...names: string[]) => {
      const plants: Plant[] = names.map((name) => ({ id: 9007199254740993n + BigInt(state.committed++), name }));
      const writer = new OutboxWriter(state.outbox, () => undefined, PLANT_CREATED);
      await inTransaction((transaction) => writer.publish(transaction, plants));
    },
    /** An endpoint (enabled unless said, subscribed to `eventTypes` or the default), by its id. */
    endpoint: async (url: string, disabled = false, eventTypes?: readonly string[]) =>
      (
        await state.endpoints.create(
          { id: newEndpointId(), url, description: '', disabled, secret: newSecret(), eventTypes },
          100,
        )
      ).id,
  };
}

export { MIGRATIONS as WEBHOOK_TEST_MIGRATIONS };
