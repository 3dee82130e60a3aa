import { sql } from 'kysely';
import { PostgresDatabase } from '../src/database/postgres-database';
import { PLANTS_MIGRATIONS } from '../src/plants/persistence/plants.migrations';
import { describePostgres } from './support/postgres';
import { useFreshDatabase } from './support/stores';

/** What `PostgresDatabase.transaction` sends with its BEGIN (durability, named locks, held writes). */
describePostgres('PostgresDatabase', () => {
  const database = useFreshDatabase(true, PLANTS_MIGRATIONS) as () => PostgresDatabase;
  const setting = () => sql<{ synchronous_commit: string }>`SHOW synchronous_commit`.compile(database().kysely);
  const locks = () =>
    sql<{ locktype: string; mode: string; relation: string | null }>`
      SELECT locktype, mode, relation::regclass::text AS relation FROM pg_locks
      WHERE pid = pg_backend_pid() AND (locktype = 'advisory' OR relation = 'plants'::regclass) ORDER BY locktype
    `.compile(database().kysely);

  describe('transaction', () => {
    it('should commit without waiting for the WAL flush when relaxed, and as configured otherwise', async () => {
      const level = (durability?: 'full' | 'relaxed') =>
        database().transaction(
          'read the level',
          async (tx) => (await tx.execute(setting())).rows[0].synchronous_commit,
          {
            durability,
          },
        );
      await expect(level('relaxed')).resolves.toBe('off');
      await expect(level()).resolves.toBe('on');
    });

    it('should not run afterCommit callbacks when the COMMIT itself fails (a deferred constraint)', async () => {
      const called = jest.fn();
      const failed = database().transaction('store twice', async (tx) => {
        tx.afterCommit(called);
        await tx.execute(
          sql`CREATE TEMP TABLE once (id int PRIMARY KEY DEFERRABLE INITIALLY DEFERRED) ON COMMIT DROP`.compile(
            database().kysely,
          ),
        );
        await tx.execute(sql`INSERT INTO once VALUES (1), (1)`.compile(database().kysely));
      });
      await expect(failed).rejects.toThrow('PostgreSQL failed to store twice');
      expect(called).not.toHaveBeenCalled();
    });

    it('should take its named locks and hold back writes to the tables it names, until it commits', async () => {
      const held = await database().transaction('read the locks', async (tx) => (await tx.execute(locks())).rows, {
        locks: ['plant-store:test'],
        holdWritesTo: ['plants'],
      });
      expect(held).toEqual([
        { locktype: 'advisory', mode: 'ExclusiveLock', relation: null },
        { locktype: 'relation', mode: 'ShareLock', relation: 'plants' },
      ]);
      await expect(
        database().transaction('read the locks', async (tx) => (await tx.execute(locks())).rows),
      ).resolves.toEqual([]);
    });
  });
});
