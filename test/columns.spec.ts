import {
  DummyDriver,
  Insertable,
  Kysely,
  Selectable,
  SqliteAdapter,
  SqliteIntrospector,
  SqliteQueryCompiler,
} from 'kysely';
import { column, columnName, RowOf, rowMapping, TableOf, ValueOf } from '../src/database/columns';
import { Tables } from '../src/database/tables';
import { Plant } from '../src/plants/plant';
import '../src/plants/persistence/plants.migrations';

/**
 * A table's one declaration (`columns.ts`): the value, the row and the query builder's table all follow
 * it, each field's optionality and type with it. The type checks below fail the build (and this
 * spec, which ts-jest type-checks) when one of them stops following the declaration.
 */
type Same<A, B> = (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2 ? true : false;
type Flat<T> = { [K in keyof T]: T[K] };
const holds = <Check extends true>(): Check | undefined => undefined;

type Size = 'small' | 'large';
const SUPPLIER_COLUMNS = {
  id: column.int64(),
  name: column.text(),
  sowBy: column.time().optional(),
  size: column.text<Size>(),
  stock: column.int64().optional(),
  organic: column.boolean(),
  count: column.integer().optional(),
};
type Supplier = ValueOf<typeof SUPPLIER_COLUMNS>;

holds<
  Same<
    Supplier,
    {
      readonly id: bigint;
      readonly name: string;
      readonly sowBy?: Date;
      readonly size: Size;
      readonly stock?: bigint;
      readonly organic: boolean;
      readonly count?: number;
    }
  >
>();
holds<
  Same<
    RowOf<typeof SUPPLIER_COLUMNS>,
    {
      id: bigint;
      name: string;
      sow_by: Date | null;
      size: Size;
      stock: bigint | null;
      organic: boolean;
      count: number | null;
    }
  >
>();
holds<Same<keyof TableOf<typeof SUPPLIER_COLUMNS>, keyof RowOf<typeof SUPPLIER_COLUMNS>>>();
holds<Same<Plant, { readonly id: bigint; readonly name: string; readonly tag?: string }>>();
// What the query builder reads from and takes for plants: an int64 as either store reads it, the tag nullable.
holds<Same<Selectable<Tables['plants']>, { id: bigint | string; name: string; tag: string | null }>>();
holds<Same<Flat<Insertable<Tables['plants']>>, { id: bigint; name: string; tag?: string | null }>>();

// @ts-expect-error: a required field is required in the value
void ({ id: 1n, size: 'small', organic: true } satisfies Supplier);
// @ts-expect-error: an optional field is absent, never null, in the value
void ({ id: 1n, name: 'A', size: 'small', organic: true, stock: null } satisfies Supplier);
// @ts-expect-error: a union of strings stays one
void ({ id: 1n, name: 'A', size: 'medium', organic: true } satisfies Supplier);
const nullRow = { id: 1n, name: 'A', sow_by: null, size: 'small', organic: true, stock: null, count: null } as const;
void (nullRow satisfies RowOf<typeof SUPPLIER_COLUMNS>);
// @ts-expect-error: a required field's column is NOT NULL in the row
void ({ ...nullRow, name: null } satisfies RowOf<typeof SUPPLIER_COLUMNS>);
// @ts-expect-error: the row is keyed by column (snake_case), not by field
void ({ ...nullRow, sowBy: null } satisfies RowOf<typeof SUPPLIER_COLUMNS>);

const db = new Kysely<Tables>({
  dialect: {
    createAdapter: () => new SqliteAdapter(),
    createDriver: () => new DummyDriver(),
    createIntrospector: (kysely) => new SqliteIntrospector(kysely),
    createQueryCompiler: () => new SqliteQueryCompiler(),
  },
});

describe('a declaration of columns', () => {
  it('should give the query builder its table: declared columns type-check, others do not', () => {
    const query = db.selectFrom('plants').select(['id', 'tag']).where('tag', 'is', null);
    holds<
      Same<Awaited<ReturnType<typeof query.executeTakeFirstOrThrow>>, { id: bigint | string; tag: string | null }>
    >();
    expect(query.compile().sql).toBe('select "id", "tag" from "plants" where "tag" is null');
    // @ts-expect-error: plants have no colour
    expect(() => db.selectFrom('plants').select('colour').compile()).not.toThrow();
  });

  it('should name each column in snake_case, as its type does', () => {
    holds<
      Same<
        keyof RowOf<{ id: ReturnType<typeof column.int64>; sowByDay2: ReturnType<typeof column.text> }>,
        'id' | 'sow_by_day2'
      >
    >();
    expect(['id', 'sowBy', 'sowByDay2', 'inStock'].map(columnName)).toEqual([
      'id',
      'sow_by',
      'sow_by_day2',
      'in_stock',
    ]);
  });

  const { toRow, fromRow, sameRow } = rowMapping(SUPPLIER_COLUMNS);
  const same = (a: Supplier, b: Supplier) => sameRow(toRow(a), toRow(b));
  const bare: Supplier = { id: 7n, name: 'Fern', size: 'small', organic: false };
  const full: Supplier = { ...bare, sowBy: new Date('2026-12-07T05:00:00.000Z'), stock: 2n ** 63n - 1n, count: 0 };

  it('should store an absent optional field as NULL, and read NULL back as absent', () => {
    const row = toRow(bare);
    expect(row).toStrictEqual({
      id: 7n,
      name: 'Fern',
      sow_by: null,
      size: 'small',
      stock: null,
      organic: false,
      count: null,
    });
    expect(fromRow(row)).toStrictEqual(bare);
    expect(fromRow(toRow(full))).toStrictEqual(full);
    expect(toRow(full)).toMatchObject({ sow_by: full.sowBy, stock: full.stock, count: 0 });
  });

  it('should find two values the same when every field is, a time by its instant', () => {
    expect(same(full, { ...full, sowBy: new Date(full.sowBy!.getTime()) })).toBe(true);
    expect(same(bare, { ...bare })).toBe(true);
    expect(same(full, { ...full, sowBy: new Date(full.sowBy!.getTime() + 1) })).toBe(false);
    expect(same(full, { ...full, count: undefined })).toBe(false);
    expect(same(bare, { ...bare, size: 'large' })).toBe(false);
    expect(same(bare, { ...bare, organic: true })).toBe(false);
  });
});
