import { ResourceConflictError } from '../src/common/errors/resource-conflict.error';
import { InsertOnce } from '../src/database/insert-once';
import { column, rowMapping, ValueOf } from '../src/database/columns';
import { InsertOnceTable } from '../src/database/insert-once-table';
import { Migration } from '../src/database/migration';
import { describeOnEachDatabase } from './support/stores';

/**
 * Every column kind `InsertOnce` takes, on each store, from one declaration: the value and the row
 * typed plainly (`count: number`, `done: boolean`) read back as they were written, so the default
 * mapping and `same` need no conversions and an identical create is a replay. (SQLite reads its
 * integers as bigints and flags as 0/1, PostgreSQL an int8 as text: without the conversions, `3n === 3`
 * made every replay a 409.) `sownAt` is `sown_at` in the store.
 */
const SAMPLE_COLUMNS = {
  id: column.int64(),
  count: column.integer(),
  ratio: column.double(),
  done: column.boolean(),
  big: column.int64(),
  note: column.text().optional(),
  sownAt: column.time().optional(),
};

type Sample = ValueOf<typeof SAMPLE_COLUMNS>;

const SAMPLES_MIGRATIONS: readonly Migration[] = [
  {
    name: 'samples/2026-11-29-01-create-samples',
    sqlite: `CREATE TABLE samples (
               id INTEGER PRIMARY KEY, count INTEGER NOT NULL, ratio REAL NOT NULL, done INTEGER NOT NULL,
               big INTEGER NOT NULL, note TEXT, sown_at TEXT
             ) STRICT`,
    postgres: `CREATE TABLE samples (
                 id BIGINT PRIMARY KEY, count INTEGER NOT NULL, ratio DOUBLE PRECISION NOT NULL,
                 done BOOLEAN NOT NULL, big BIGINT NOT NULL, note TEXT, sown_at TIMESTAMPTZ
               )`,
  },
];

/** What `fromRow` was handed, column by column: the JavaScript type of each value. */
const seen: Record<string, string>[] = [];

const DEFAULT = rowMapping(SAMPLE_COLUMNS);
const SAMPLES: InsertOnceTable<typeof SAMPLE_COLUMNS> = {
  what: 'a sample',
  table: 'samples',
  columns: SAMPLE_COLUMNS,
  // The default mapping, watched.
  fromRow: (row) => {
    seen.push(Object.fromEntries(Object.entries(row).map(([key, value]) => [key, typeOf(value)])));
    return DEFAULT.fromRow(row);
  },
  conflict: ({ id }) => new ResourceConflictError(`A sample with id ${id} already exists with different content`),
};

function typeOf(value: unknown): string {
  return value === null ? 'null' : value instanceof Date ? 'Date' : typeof value;
}

const FULL: Sample = {
  id: 9007199254740993n,
  count: 3,
  ratio: 0.25,
  done: true,
  big: -(2n ** 63n),
  note: 'Sown late',
  sownAt: new Date('2026-11-29T05:10:00.123Z'),
};
const BARE: Sample = { id: -(2n ** 63n), count: 10000, ratio: -1, done: false, big: 2n ** 63n - 1n };

describeOnEachDatabase('InsertOnce columns on %s', SAMPLES_MIGRATIONS, (database) => {
  describe.each([false, true])('with groupCommit: %s', (groupCommit) => {
    const samples = () => new InsertOnce(database(), { ...SAMPLES, groupCommit });

    beforeEach(() => {
      seen.length = 0;
    });

    it('should hand fromRow each column as its field is typed, and read back what it stored', async () => {
      await expect(samples().create(FULL)).resolves.toEqual({ value: FULL, created: true });
      await expect(samples().create(BARE)).resolves.toEqual({ value: BARE, created: true });
      await expect(samples().get(FULL.id)).resolves.toStrictEqual(FULL);
      await expect(samples().get(BARE.id)).resolves.toStrictEqual(BARE);
      // Each read (PostgreSQL also reads the rows its insert returns) saw one of the two.
      const full = { id: 'bigint', count: 'number', ratio: 'number', done: 'boolean', big: 'bigint' };
      const shapes = (types: readonly object[]) => new Set(types.map((shape) => JSON.stringify(shape)));
      expect(shapes(seen)).toEqual(
        shapes([
          { ...full, note: 'string', sown_at: 'Date' },
          { ...full, note: 'null', sown_at: 'null' },
        ]),
      );
    });

    it('should answer an identical create as a replay, whatever the column types', async () => {
      await samples().create(FULL);
      await samples().create(BARE);
      await expect(samples().create({ ...FULL })).resolves.toEqual({ value: FULL, created: false });
      await expect(samples().create({ ...BARE })).resolves.toEqual({ value: BARE, created: false });
    });

    it.each<[string, Partial<Sample>]>([
      ['an integer', { count: 4 }],
      ['a double', { ratio: 0.5 }],
      ['a flag', { done: false }],
      ['an int64 by one', { big: -(2n ** 63n) + 1n }],
      ['a time by a millisecond', { sownAt: new Date('2026-11-29T05:10:00.124Z') }],
      ['an optional field by its absence', { note: undefined }],
    ])('should refuse a create that differs in %s with the conflict error', async (_label, change) => {
      await samples().create(FULL);
      await expect(samples().create({ ...FULL, ...change })).rejects.toThrow(ResourceConflictError);
      await expect(samples().get(FULL.id)).resolves.toStrictEqual(FULL);
    });
  });

  // A value shaped unlike its columns (its own toRow and fromRow, no same): compared by what it stores.
  type Boxed = { readonly id: bigint; readonly size: { readonly count: number; readonly ratio: number } };
  const boxed = () =>
    new InsertOnce<typeof SAMPLE_COLUMNS, Boxed>(database(), {
      what: 'a sample',
      table: 'samples',
      columns: SAMPLE_COLUMNS,
      toRow: ({ id, size }) => DEFAULT.toRow({ ...BARE, id, count: size.count, ratio: size.ratio }),
      fromRow: (row) => ({ id: row.id, size: { count: row.count, ratio: row.ratio } }),
      conflict: ({ id }) => new ResourceConflictError(`A sample with id ${id} already exists with different content`),
    });

  it('should compare a value that maps its own row by that row: other content is a conflict, the same a replay', async () => {
    const value: Boxed = { id: 42n, size: { count: 1, ratio: 2 } };
    await expect(boxed().create(value)).resolves.toEqual({ value, created: true });
    await expect(boxed().create({ id: 42n, size: { count: 1, ratio: 2 } })).resolves.toEqual({ value, created: false });
    await expect(boxed().create({ id: 42n, size: { count: 9, ratio: 9 } })).rejects.toThrow(ResourceConflictError);
  });
});

describe('rowMapping', () => {
  it('should refuse two fields that share a column', () => {
    expect(() => rowMapping({ id: column.int64(), sowBy: column.text(), sow_by: column.text() })).toThrow(
      'Two fields share the column sow_by: rename sow_by',
    );
  });

  it('should compare a time by its instant, as a Date or as ISO 8601 text', () => {
    const { toRow, sameRow } = rowMapping(SAMPLE_COLUMNS);
    const text = { ...FULL, sownAt: '2026-11-29T05:10:00.123+00:00' as unknown as Date };
    expect(sameRow(toRow(FULL), toRow(text))).toBe(true);
    expect(sameRow(toRow(FULL), toRow({ ...text, sownAt: '2026-11-29T05:10:00.124Z' as unknown as Date }))).toBe(false);
    expect(sameRow(toRow(FULL), toRow({ ...FULL, sownAt: undefined }))).toBe(false);
  });
});
