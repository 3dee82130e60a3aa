import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import { sql } from 'kysely';
import { BUSY_WAIT_MS, SqliteDatabase } from '../src/database/sqlite-database';
import { StorageUnavailableError } from '../src/database/storage-unavailable.error';
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
    const inserted = database.transaction('store a plant', (tx) =>
      tx.execute(database.kysely.insertInto('plants').values({ id: 2n, name: 'kept', tag: null }).compile()),
    );
    await expect(inserted).resolves.toEqual({ rows: [], affectedRows: 1 });
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

  it('should leave out the row locks of a query written for both stores: BEGIN IMMEDIATE holds the whole file', () => {
    const query = database.kysely.selectFrom('plants').select('id').where('id', '=', 1n).forUpdate().skipLocked();
    expect(query.compile().sql).toBe('select "id" from "plants" where "id" = ?');
  });

  describe('transaction', () => {
    const insert = (id: bigint, name: string) =>
      database.kysely.insertInto('plants').values({ id, name, tag: null }).compile();
    const names = async () =>
      (
        await database.execute('read', database.kysely.selectFrom('plants').select('name').orderBy('id').compile())
      ).rows.map((row) => row.name);

    it('should run each statement at once, so work that awaits nothing else runs from BEGIN to COMMIT in one go', async () => {
      let during: unknown;
      await database.transaction('store a plant', (tx) => {
        during = tx.execute(insert(1n, 'Aloe'));
      });
      expect(during).toEqual({ rows: [], affectedRows: 1 });
    });

    it("should run BEGIN, work that awaits nothing and COMMIT in the caller's tick when no transaction is open", () => {
      // A group commit times how long its commit held the event loop: all of it must happen in that call.
      const other = new BetterSqlite3(join(dir, 'plants.db'));
      try {
        void database.transaction('store a plant', (tx) => tx.execute(insert(1n, 'Aloe')));
        expect(database.connection.inTransaction).toBe(false);
        expect(other.prepare('SELECT name FROM plants').all()).toEqual([{ name: 'Aloe' }]);
      } finally {
        other.close();
      }
    });

    it("should hold back this process's statements and transactions while one that awaits is open", async () => {
      let release!: () => void;
      const held = new Promise<void>((resolve) => (release = resolve));
      const order: string[] = [];
      const first = database.transaction('store a plant', async (tx) => {
        await tx.execute(insert(1n, 'Aloe'));
        await held;
        order.push('first committing');
      });
      await new Promise((resolve) => setTimeout(resolve, 10)); // the first is open now
      const read = names().then((seen) => order.push(`read ${seen.join()}`));
      const second = database
        .transaction('store a plant', async (tx) => void (await tx.execute(insert(2n, 'Fern'))))
        .then(() => order.push('second committed'));
      await new Promise((resolve) => setTimeout(resolve, 20));
      expect(order).toEqual([]);
      release();
      await Promise.all([first, read, second]);
      expect(order).toEqual(['first committing', 'read Aloe', 'second committed']);
      expect(await names()).toEqual(['Aloe', 'Fern']);
    });

    it('should wait for a file another process is writing, then answer 503 after BUSY_WAIT_MS', async () => {
      const other = new BetterSqlite3(join(dir, 'plants.db'));
      try {
        other.exec('BEGIN IMMEDIATE');
        setTimeout(() => other.exec('COMMIT'), BUSY_WAIT_MS / 2);
        await expect(
          database.transaction('store a plant', async (tx) => (await tx.execute(insert(1n, 'Aloe'))).affectedRows),
        ).resolves.toBe(1);
        other.exec('BEGIN IMMEDIATE');
        const started = Date.now();
        const order: string[] = [];
        const failed = database.transaction('store a plant', (tx) => tx.execute(insert(2n, 'Fern')));
        failed.catch(() => order.push('write failed'));
        // Between its tries, this process's reads go on: a read sent after the write is answered
        // while the write still waits for the file, not after it gives up.
        await names().then((seen) => order.push(`read ${seen.join()}`));
        await failed.catch(() => undefined);
        expect(order).toEqual(['read Aloe', 'write failed']);
        await expect(failed).rejects.toThrow(StorageUnavailableError);
        await expect(failed).rejects.toThrow('SQLite failed to store a plant: the SQLite file cannot be written');
        expect(Date.now() - started).toBeGreaterThanOrEqual(BUSY_WAIT_MS);
        other.exec('ROLLBACK');
      } finally {
        other.close();
      }
      expect(await names()).toEqual(['Aloe']);
    });

    it('should run a relaxed transaction on the relaxed connection (synchronous=NORMAL), and the rest at FULL', async () => {
      const synchronous = sql<{ synchronous: bigint }>`PRAGMA synchronous`.compile(database.kysely);
      const level = (durability?: 'full' | 'relaxed') =>
        database.transaction('read the level', async (tx) => (await tx.execute(synchronous)).rows[0].synchronous, {
          durability,
        });
      await expect(level('relaxed')).resolves.toBe(1n);
      await expect(level()).resolves.toBe(2n);
    });
  });
});
