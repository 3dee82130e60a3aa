import { Logger } from '@nestjs/common';
import BetterSqlite3 from 'better-sqlite3';
import { Client } from 'pg';
import { StorageError } from '../src/database/storage.error';
import { PLANTS_MIGRATIONS } from '../src/plants/persistence/plants.migrations';
import { describeOnEachDatabase } from './support/stores';

/**
 * `Database.transaction`, the one way features run work on a store, on each store over a real table
 * (plants'): written once as `async (tx) => …`, committed together or not at all, the work's own
 * errors passed as they are and the driver's as the port's.
 */
describeOnEachDatabase('Database.transaction on %s', PLANTS_MIGRATIONS, (database) => {
  const insert = (id: bigint, name: string) =>
    database().kysely.insertInto('plants').values({ id, name, tag: null }).compile();
  const names = async () =>
    (
      await database().execute('read', database().kysely.selectFrom('plants').select('name').orderBy('id').compile())
    ).rows.map((row) => row.name);

  it('should commit every statement of the work and resolve with what it returns', async () => {
    const result = await database().transaction('store two plants', async (tx) => {
      const first = await tx.execute(insert(1n, 'Aloe'));
      const second = await tx.execute(insert(2n, 'Fern'));
      const { rows } = await tx.execute(database().kysely.selectFrom('plants').select('name').orderBy('id').compile());
      return { affected: first.affectedRows + second.affectedRows, seen: rows.map((row) => row.name) };
    });
    expect(result).toEqual({ affected: 2, seen: ['Aloe', 'Fern'] });
    expect(await names()).toEqual(['Aloe', 'Fern']);
  });

  it('should take work that returns a plain value', async () => {
    await expect(database().transaction('read nothing', () => 42)).resolves.toBe(42);
  });

  it('should roll everything back and pass the error the work throws as it is', async () => {
    const own = new Error('the work changed its mind');
    await expect(
      database().transaction('store a plant', async (tx) => {
        await tx.execute(insert(1n, 'Aloe'));
        throw own;
      }),
    ).rejects.toBe(own);
    expect(await names()).toEqual([]);
  });

  it("should roll back and turn a statement's driver error into a StorageError naming the action", async () => {
    const failed = database().transaction('store two plants', async (tx) => {
      await tx.execute(insert(1n, 'Aloe'));
      await tx.execute(insert(1n, 'Aloe again'));
    });
    await expect(failed).rejects.toThrow(StorageError);
    await expect(failed).rejects.toThrow(/^(SQLite|PostgreSQL) failed to store two plants$/);
    // The driver's error stays as the cause, for the log: the primary key's violation.
    await expect(failed.catch((error: Error) => error.cause)).resolves.toMatchObject({
      code: expect.stringMatching(/^(SQLITE_CONSTRAINT_PRIMARYKEY|23505)$/),
    });
    expect(await names()).toEqual([]);
  });

  it("should let the work catch a statement's error and throw its own instead", async () => {
    class Taken extends Error {}
    await expect(
      database().transaction('store a plant', async (tx) => {
        await tx.execute(insert(1n, 'Aloe'));
        try {
          await tx.execute(insert(1n, 'Aloe again'));
        } catch {
          throw new Taken('id 1 is taken');
        }
      }),
    ).rejects.toThrow(Taken);
    expect(await names()).toEqual([]);
  });

  it("should roll back and reject work that caught a statement's error and carried on, on both stores alike", async () => {
    // PostgreSQL aborts a transaction at a failed statement and answers its COMMIT with a ROLLBACK:
    // resolving here would tell the caller that its writes are stored when none is.
    const carriedOn = database().transaction('store two plants', async (tx) => {
      await tx.execute(insert(1n, 'Aloe'));
      for (const [id, name] of [
        [1n, 'Aloe again'],
        [2n, 'Fern'], // PostgreSQL refuses it too: the transaction is aborted
      ] as const) {
        try {
          await tx.execute(insert(id, name));
        } catch {
          // carried on
        }
      }
      return 'stored';
    });
    await expect(carriedOn).rejects.toThrow(/^(SQLite|PostgreSQL) failed to store two plants$/);
    await expect(carriedOn.catch((error: Error) => error.cause)).resolves.toMatchObject({
      code: expect.stringMatching(/^(SQLITE_CONSTRAINT_PRIMARYKEY|23505)$/),
    });
    expect(await names()).toEqual([]);
    // The store is usable afterwards (the connection or the turn was given back).
    await database().transaction('store a plant', (tx) => tx.execute(insert(3n, 'Ivy')));
    expect(await names()).toEqual(['Ivy']);
  });

  describe('afterCommit', () => {
    afterEach(() => jest.restoreAllMocks());

    /** Notes in `calls` each COMMIT the store's driver is asked to run. */
    const noteCommits = (calls: string[]) => {
      const note = (text: unknown) => text === 'COMMIT' && calls.push('COMMIT');
      if (database().kind === 'postgres') {
        const query = Client.prototype.query;
        jest.spyOn(Client.prototype, 'query').mockImplementation(function (this: Client, ...args: unknown[]) {
          note(typeof args[0] === 'string' ? args[0] : (args[0] as { text?: string }).text);
          return (query as (...all: unknown[]) => unknown).apply(this, args);
        });
      } else {
        const exec = BetterSqlite3.prototype.exec;
        jest.spyOn(BetterSqlite3.prototype, 'exec').mockImplementation(function (this: BetterSqlite3.Database, text) {
          note(text);
          return exec.call(this, text);
        });
      }
    };

    it('should run its callbacks once the transaction has committed, in order, before it resolves', async () => {
      const calls: string[] = [];
      let seenAfter: Promise<string[]> | undefined;
      noteCommits(calls);
      const result = await database().transaction('store a plant', async (tx) => {
        tx.afterCommit(() => {
          calls.push('first');
          // Another connection (PostgreSQL), or the next statement's turn (SQLite): it sees the commit.
          seenAfter = names();
        });
        await tx.execute(insert(1n, 'Aloe'));
        tx.afterCommit(() => calls.push('second'));
        calls.push('work done');
        return 'stored';
      });
      expect(result).toBe('stored');
      expect(calls).toEqual(['work done', 'COMMIT', 'first', 'second']);
      await expect(seenAfter).resolves.toEqual(['Aloe']);
    });

    it('should never run them when the transaction rolls back', async () => {
      const called = jest.fn();
      const own = new Error('the work changed its mind');
      await expect(
        database().transaction('store a plant', async (tx) => {
          tx.afterCommit(called);
          await tx.execute(insert(1n, 'Aloe'));
          throw own;
        }),
      ).rejects.toBe(own);
      await expect(
        database().transaction('store two plants', async (tx) => {
          tx.afterCommit(called);
          await tx.execute(insert(1n, 'Aloe'));
          await tx.execute(insert(1n, 'Aloe again'));
        }),
      ).rejects.toThrow(StorageError);
      // Work that caught the failed statement and carried on: rolled back all the same.
      await expect(
        database().transaction('store two plants', async (tx) => {
          tx.afterCommit(called);
          await tx.execute(insert(1n, 'Aloe'));
          await Promise.resolve(tx.execute(insert(1n, 'Aloe again'))).catch(() => undefined);
        }),
      ).rejects.toThrow(StorageError);
      expect(called).not.toHaveBeenCalled();
      expect(await names()).toEqual([]);
    });

    it('should log a callback that throws, run the others, and resolve: the transaction committed', async () => {
      const logged = jest.spyOn(Logger.prototype, 'error').mockImplementation(() => undefined);
      const after = jest.fn();
      await expect(
        database().transaction('store a plant', async (tx) => {
          tx.afterCommit(() => {
            throw new Error('the wake failed');
          });
          tx.afterCommit(after);
          await tx.execute(insert(1n, 'Aloe'));
          return 'stored';
        }),
      ).resolves.toBe('stored');
      expect(after).toHaveBeenCalledTimes(1);
      expect(logged.mock.calls).toEqual([['A callback after a commit failed: the wake failed']]);
      expect(await names()).toEqual(['Aloe']);
    });
  });

  it('should run transactions that take the same lock one after the other', async () => {
    const count = database()
      .kysely.selectFrom('plants')
      .select((eb) => eb.fn.countAll<number | bigint | string>().as('n'));
    // Read, wait, then write what was read: two at once would both read 0 without the lock.
    const addOne = () =>
      database().transaction(
        'add a plant',
        async (tx) => {
          const { rows } = await tx.execute(count.compile());
          const next = BigInt(rows[0].n) + 1n;
          await new Promise((resolve) => setTimeout(resolve, 20));
          await tx.execute(insert(next, `plant ${next}`));
        },
        { locks: ['plant-store:test-counter'] },
      );
    await Promise.all([addOne(), addOne(), addOne()]);
    expect(await names()).toEqual(['plant 1', 'plant 2', 'plant 3']);
  });
});
