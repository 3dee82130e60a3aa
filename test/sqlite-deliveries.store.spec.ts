import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SqliteDatabase } from '../src/database/sqlite-database';
import { PLANTS_MIGRATIONS } from '../src/plants/persistence/plants.migrations';
import { insertDeliveriesSqlite, SqliteDeliveriesStore } from '../src/webhooks/persistence/sqlite-deliveries.store';
import { WEBHOOK_MIGRATIONS } from '../src/webhooks/webhooks.migrations';

describe('SqliteDeliveriesStore', () => {
  let dir: string;
  let database: SqliteDatabase;
  let store: SqliteDeliveriesStore;

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'plant-store-outbox-'));
    database = new SqliteDatabase(join(dir, 'plants.db'), [...PLANTS_MIGRATIONS, ...WEBHOOK_MIGRATIONS]);
    database.onModuleInit();
    store = new SqliteDeliveriesStore(database);
    insertDeliveriesSqlite(database.connection, [
      { webhookId: 'msg_1', url: 'http://127.0.0.1:1/hook', payload: '{"id":1,"name":"a"}' },
    ]);
  });
  afterEach(() => {
    jest.restoreAllMocks();
    database.onApplicationShutdown();
    rmSync(dir, { recursive: true, force: true });
  });

  it('should keep a claim leased when the wall clock is set an hour forward', async () => {
    expect(await store.claim(10, 60_000)).toHaveLength(1);
    const now = Date.now();
    jest.spyOn(Date, 'now').mockReturnValue(now + 3_600_000);
    expect(await store.claim(10, 60_000)).toEqual([]);
  });

  it('should hand a delivery out again once its lease has run out', async () => {
    expect(await store.claim(10, 1)).toHaveLength(1);
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(await store.claim(10, 60_000)).toEqual([expect.objectContaining({ webhookId: 'msg_1', attempts: 0 })]);
  });
});
