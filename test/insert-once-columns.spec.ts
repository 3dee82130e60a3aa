import { ResourceConflictError } from '../src/common/errors/resource-conflict.error';
import { InsertOnce } from '../src/database/insert-once';
import { InsertOnceTable } from '../src/database/insert-once-table';
import { Migration } from '../src/database/migration';
import { describeOnEachDatabase } from './support/stores';

/**
 * Every column type `InsertOnce` takes, on each store: a row typed plainly (`count: number`,
 * `done: boolean`) reads back as it was written, so a resource's `fromRow` and `same` need no
 * conversions and an identical create is a replay. (SQLite reads its integers as bigints and flags
 * as 0/1, PostgreSQL an int8 as text: without the conversions, `3n === 3` made every replay a 409.)
 */
interface Sample {
  readonly id: bigint;
  readonly count: number;
  readonly ratio: number;
  readonly done: boolean;
  readonly big: bigint;
  readonly note?: string;
  readonly sown?: Date;
}

interface SampleRow {
  id: bigint;
  count: number;
  ratio: number;
  done: boolean;
  big: bigint;
  note: string | null;
  sown: Date | null;
}

const SAMPLES_MIGRATIONS: readonly Migration[] = [
  {
    name: 'samples/2026-11-29-01-create-samples',
    sqlite: `CREATE TABLE samples (
               id INTEGER PRIMARY KEY, count INTEGER NOT NULL, ratio REAL NOT NULL, done INTEGER NOT NULL,
               big INTEGER NOT NULL, note TEXT, sown TEXT
             ) STRICT`,
    postgres: `CREATE TABLE samples (
                 id BIGINT PRIMARY KEY, count INTEGER NOT NULL, ratio DOUBLE PRECISION NOT NULL,
                 done BOOLEAN NOT NULL, big BIGINT NOT NULL, note TEXT, sown TIMESTAMPTZ
               )`,
  },
];

/** What `fromRow` was handed, field by field: the JavaScript type of each value. */
const seen: Record<string, string>[] = [];

const SAMPLES: InsertOnceTable<Sample, SampleRow> = {
  what: 'a sample',
  table: 'samples',
  columns: {
    id: 'bigint',
    count: 'integer',
    ratio: 'double precision',
    done: 'boolean',
    big: 'bigint',
    note: 'text',
    sown: 'timestamptz',
  },
  toRow: ({ note, sown, ...fields }) => ({ ...fields, note: note ?? null, sown: sown ?? null }),
  fromRow: (row) => {
    seen.push(Object.fromEntries(Object.entries(row).map(([key, value]) => [key, typeOf(value)])));
    const { note, sown, ...fields } = row;
    return { ...fields, ...(note === null ? {} : { note }), ...(sown === null ? {} : { sown }) };
  },
  same: (a, b) =>
    a.count === b.count &&
    a.ratio === b.ratio &&
    a.done === b.done &&
    a.big === b.big &&
    a.note === b.note &&
    a.sown?.getTime() === b.sown?.getTime(),
  conflict: ({ id }) => new ResourceConflictError(`A sample with id ${id} already exists with different content`),
};

function typeOf(value: unknown): string {
  return value === null ? 'null' : value instanceof Date ? 'Date' : typeof value;
}

// A column whose type cannot hold its field is refused when the table is written, not at run time.
type SampleColumns = InsertOnceTable<Sample, SampleRow>['columns'];
// @ts-expect-error: a number field in a text column
void ({ ...SAMPLES.columns, count: 'text' } satisfies SampleColumns);

const FULL: Sample = {
  id: 9007199254740993n,
  count: 3,
  ratio: 0.25,
  done: true,
  big: -(2n ** 63n),
  note: 'Sown late',
  sown: new Date('2026-11-29T05:10:00.123Z'),
};
const BARE: Sample = { id: -(2n ** 63n), count: 10000, ratio: -1, done: false, big: 2n ** 63n - 1n };

describeOnEachDatabase('InsertOnce columns on %s', SAMPLES_MIGRATIONS, (database) => {
  describe.each([false, true])('with groupCommit: %s', (groupCommit) => {
    const samples = () => new InsertOnce<Sample, SampleRow>(database(), { ...SAMPLES, groupCommit });

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
          { ...full, note: 'string', sown: 'Date' },
          { ...full, note: 'null', sown: 'null' },
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
      ['a time by a millisecond', { sown: new Date('2026-11-29T05:10:00.124Z') }],
    ])('should refuse a create that differs in %s with the conflict error', async (_label, change) => {
      await samples().create(FULL);
      await expect(samples().create({ ...FULL, ...change })).rejects.toThrow(ResourceConflictError);
      await expect(samples().get(FULL.id)).resolves.toStrictEqual(FULL);
    });
  });
});
