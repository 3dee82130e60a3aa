import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import { RawBuilder, sql } from 'kysely';
import { ResourceConflictError } from '../src/common/errors/resource-conflict.error';
import { Database } from '../src/database/database';
import { CreatedEventsPort, InsertOnce } from '../src/database/insert-once';
import { StatementAddition } from '../src/database/statement-addition';
import { Transaction } from '../src/database/transaction';
import { BUSY_WAIT_MS, SqliteDatabase } from '../src/database/sqlite-database';
import { StorageUnavailableError } from '../src/database/storage-unavailable.error';
import { PLANTS_MIGRATIONS } from '../src/plants/persistence/plants.migrations';
import { describeOnEachDatabase } from './support/stores';

/**
 * The shared create path (a new resource's repository starts with it; plants add the group commit),
 * on each store, over a real table: plants'. Stored once; the same row again is a replay; other
 * content is a 409; concurrent creates of one key store it once.
 */
interface Named {
  readonly id: bigint;
  readonly name: string;
}

/** The create path under test, over plants' table (its tag left empty). */
function namedPlants(database: Database, events?: CreatedEventsPort<Named>) {
  return new InsertOnce<Named, { id: bigint; name: string; tag: string | null }>(database, {
    what: 'a plant',
    table: 'plants',
    columns: { id: 'bigint', name: 'text', tag: 'text' },
    toRow: ({ id, name }) => ({ id, name, tag: null }),
    fromRow: ({ id, name }) => ({ id, name }),
    same: (stored, value) => stored.name === value.name,
    conflict: ({ id }) =>
      new ResourceConflictError(`A plant with id ${id} already exists with a different name or tag`),
    events,
  });
}

async function createIn(database: Database, id: bigint, name: string, events?: CreatedEventsPort<Named>) {
  const { created } = await namedPlants(database, events).create({ id, name });
  return { created };
}

/**
 * A port that records what it is asked (SQLite: `created` in the transaction, `committed` after;
 * PostgreSQL: `createdInStatement`, whose statement reads the inserted key and whose outcome comes back).
 */
class RecordingEvents implements CreatedEventsPort<Named> {
  readonly calls: unknown[][] = [];
  created(_transaction: Transaction, rows: readonly Named[]): void {
    this.calls.push(['created', ...rows.map((row) => row.name)]);
  }
  committed(): void {
    this.calls.push(['committed']);
  }
  createdInStatement(inserted: RawBuilder<unknown>, rows: readonly Named[]): StatementAddition {
    this.calls.push(['createdInStatement', ...rows.map((row) => row.name)]);
    return {
      ctes: sql`, seen AS (SELECT id FROM ${inserted})`,
      outcome: sql`(SELECT id::text FROM seen)`,
      committed: (outcome) => this.calls.push(['committed', outcome]),
    };
  }
}

describeOnEachDatabase('InsertOnce on %s', PLANTS_MIGRATIONS, (database, reopen) => {
  const create = (id: bigint, name: string) => createIn(database(), id, name);
  const names = async (id: bigint) => {
    const stored = await namedPlants(database()).get(id);
    return stored === undefined ? [] : [stored.name];
  };

  it('should store a new key, then answer the same content as a replay', async () => {
    await expect(create(9007199254740993n, 'Monstera')).resolves.toEqual({ created: true });
    await expect(create(9007199254740993n, 'Monstera')).resolves.toEqual({ created: false });
    expect(await names(9007199254740993n)).toEqual(['Monstera']);
  });

  it('should keep what it stored across a restart of the store (reopen), and answer it as a replay there', async () => {
    await expect(create(-(2n ** 63n), 'Fern')).resolves.toEqual({ created: true });
    const before = database();
    await reopen();
    expect(database()).not.toBe(before);
    expect(await names(-(2n ** 63n))).toEqual(['Fern']);
    await expect(create(-(2n ** 63n), 'Fern')).resolves.toEqual({ created: false });
    await expect(create(-(2n ** 63n), 'Ivy')).rejects.toThrow(ResourceConflictError);
  });

  it('should publish through the events port once, in the transaction that stored the row, never for a replay or a 409', async () => {
    const events = new RecordingEvents();
    await expect(createIn(database(), 2n ** 63n - 1n, 'Fern', events)).resolves.toEqual({ created: true });
    await expect(createIn(database(), 2n ** 63n - 1n, 'Fern', events)).resolves.toEqual({ created: false });
    await expect(createIn(database(), 2n ** 63n - 1n, 'Ivy', events)).rejects.toThrow(ResourceConflictError);
    expect(events.calls).toEqual(
      database().kind === 'sqlite'
        ? [['created', 'Fern'], ['committed']]
        : // Each statement carries the port's CTEs, which read the rows it inserted: only the first
          // inserted one, and only its outcome came back as committed.
          [
            ['createdInStatement', 'Fern'],
            ['committed', '9223372036854775807'],
            ['createdInStatement', 'Fern'],
            ['createdInStatement', 'Ivy'],
          ],
    );
  });

  it('should store nothing when the events port fails, and let its error through', async () => {
    const failing = new RecordingEvents();
    failing.created = () => {
      throw new Error('the outbox failed');
    };
    failing.createdInStatement = () => ({
      ctes: sql`, broken AS (SELECT 1 / 0)`,
      outcome: sql`(SELECT * FROM broken)`,
      committed: () => undefined,
    });
    await expect(createIn(database(), 8n, 'Fern', failing)).rejects.toThrow(
      database().kind === 'sqlite' ? 'SQLite failed to store a plant' : 'PostgreSQL failed to store a plant',
    );
    expect(await names(8n)).toEqual([]);
  });

  it('should refuse other content for a stored key with ResourceConflictError, and change nothing', async () => {
    await create(-4n, 'Aloe');
    const conflict = create(-4n, 'Pothos');
    await expect(conflict).rejects.toThrow(ResourceConflictError);
    await expect(conflict).rejects.toThrow('A plant with id -4 already exists with a different name or tag');
    expect(await names(-4n)).toEqual(['Aloe']);
  });

  it('should store a key once when many create it at once, the rest being replays or conflicts', async () => {
    const outcomes = await Promise.allSettled(
      Array.from({ length: 20 }, (_, i) => create(77n, i % 2 === 0 ? 'Fern' : 'Ivy')),
    );
    expect(outcomes.filter((o) => o.status === 'fulfilled' && o.value.created)).toHaveLength(1);
    const rejected = outcomes.filter((o): o is PromiseRejectedResult => o.status === 'rejected');
    expect(rejected).toHaveLength(10);
    for (const o of rejected) expect(o.reason).toBeInstanceOf(ResourceConflictError);
  });
});

describe('InsertOnce on a busy SQLite file (another process holds its write lock)', () => {
  let dir: string;
  let database: SqliteDatabase;
  let other: BetterSqlite3.Database;

  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), 'plant-store-'));
    database = new SqliteDatabase(join(dir, 'store.db'), PLANTS_MIGRATIONS);
    await database.onModuleInit();
    other = new BetterSqlite3(join(dir, 'store.db'));
    other.exec('BEGIN IMMEDIATE');
  });
  afterEach(() => {
    if (other.inTransaction) other.exec('ROLLBACK');
    other.close();
    database.onApplicationShutdown();
    rmSync(dir, { recursive: true, force: true });
  });

  it(`should wait off the event loop and store the row when the lock is released within ${BUSY_WAIT_MS} ms`, async () => {
    const started = Date.now();
    const create = createIn(database, 5n, 'Monstera');
    let settled = false;
    void create.finally(() => (settled = true));
    await new Promise((resolve) => setTimeout(resolve, 100)); // the event loop turns meanwhile
    expect(settled).toBe(false);
    other.exec('COMMIT');
    await expect(create).resolves.toEqual({ created: true });
    expect(Date.now() - started).toBeGreaterThanOrEqual(100);
    await expect(createIn(database, 5n, 'Monstera')).resolves.toEqual({ created: false });
  });

  it(`should answer StorageUnavailableError (a 503) when the lock is held past ${BUSY_WAIT_MS} ms, and store nothing`, async () => {
    const started = Date.now();
    const create = createIn(database, 6n, 'Aloe');
    await expect(create).rejects.toThrow(StorageUnavailableError);
    await expect(create).rejects.toThrow(
      'SQLite failed to store a plant: the SQLite file cannot be written right now (SQLITE_BUSY)',
    );
    expect(Date.now() - started).toBeGreaterThanOrEqual(BUSY_WAIT_MS);
    other.exec('ROLLBACK');
    await expect(namedPlants(database).get(6n)).resolves.toBeUndefined();
  });
});
