import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SqliteDatabase } from '../src/database/sqlite-database';
import { PLANTS_MIGRATIONS } from '../src/plants/persistence/plants.migrations';

describe('SqliteDatabase', () => {
  let dir: string;
  let database: SqliteDatabase;
  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), 'plant-store-sqlite-'));
    database = new SqliteDatabase(join(dir, 'plants.db'), PLANTS_MIGRATIONS);
    await database.onModuleInit();
  });
  afterEach(() => {
    database.onApplicationShutdown();
    rmSync(dir, { recursive: true, force: true });
  });

  it("should refuse a Kysely transaction on the connection the group commit uses, and keep the store's own", async () => {
    // One of Kysely's transactions stays open across turns: the batches' statements would fall into it.
    await expect(
      database.kysely.transaction().execute(async (transaction) => {
        await transaction.insertInto('plants').values({ id: 1n, name: 'lost', tag: null }).execute();
      }),
    ).rejects.toThrow('No Kysely transaction on the shared SQLite connection: use a Database transaction');
    const inserted = database.transaction((transaction) =>
      transaction.execute(database.kysely.insertInto('plants').values({ id: 2n, name: 'kept', tag: null }).compile()),
    );
    expect(inserted).toEqual({ rows: [], affectedRows: 1 });
    // A single statement through Kysely's driver runs within one turn, like the rest.
    await expect(database.kysely.selectFrom('plants').selectAll().execute()).resolves.toEqual([
      { id: 2n, name: 'kept', tag: null },
    ]);
  });

  it('should run a statement at once, and turn a driver error into the port error naming the action', async () => {
    await expect(
      database.execute(
        'read a plant',
        database.kysely.selectFrom('plants').select('name').where('id', '=', 2n).compile(),
      ),
    ).resolves.toEqual({ rows: [], affectedRows: 0 });
    database.connection.exec('DROP TABLE plants');
    await expect(
      database.execute('read a plant', database.kysely.selectFrom('plants').select('name').compile()),
    ).rejects.toThrow('SQLite failed to read a plant');
  });
});
