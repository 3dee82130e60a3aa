import { ColumnType as KyselyColumnType } from 'kysely';
import { BooleanColumn, Int64Column, IntegerColumn, TimeColumn } from './tables';

/** A column's PostgreSQL type: the arrays of a batch's `unnest`, and how its values read back. */
export type ColumnType = 'bigint' | 'integer' | 'text' | 'boolean' | 'double precision' | 'timestamptz';

/**
 * One field of a resource and the column that keeps it: its store type, and whether it is optional
 * (absent in the value, NULL in the row). `Field` is the field's TypeScript type; it exists in types only.
 */
export interface Column<Field = unknown, Type extends ColumnType = ColumnType, Nullable extends boolean = boolean> {
  readonly type: Type;
  /** Whether the column takes NULL: the field is then optional (absent, never null). */
  readonly nullable: Nullable;
  /** Never set: carries the field's type (a union of strings, say) to the derived types. */
  readonly field?: Field;
}

/** A required column, and its optional form (`column.text().optional()`). */
export interface RequiredColumn<Field, Type extends ColumnType> extends Column<Field, Type, false> {
  /** The same column, NULL when its field is absent: the field is optional (absent, never null). */
  optional(): Column<Field, Type, true>;
}

function required<Field, Type extends ColumnType>(type: Type): RequiredColumn<Field, Type> {
  return { type, nullable: false, optional: () => ({ type, nullable: true }) };
}

/**
 * The column kinds a declaration is written with, each the field type it keeps:
 *
 * ```ts
 * export const PLANT_COLUMNS = { id: column.int64(), name: column.text(), tag: column.text().optional() };
 * export type Plant = ValueOf<typeof PLANT_COLUMNS>; // { readonly id: bigint; readonly name: string; readonly tag?: string }
 * ```
 */
export const column = {
  /** An int64, exact (`INTEGER` / `BIGINT`); the `id` is one. */
  int64: () => required<bigint, 'bigint'>('bigint'),
  /** An int32 (`INTEGER` / `INTEGER`). */
  integer: () => required<number, 'integer'>('integer'),
  /** A double (`REAL` / `DOUBLE PRECISION`). */
  double: () => required<number, 'double precision'>('double precision'),
  /** Text (`TEXT` / `TEXT`); `column.text<Size>()` keeps a union of strings. */
  text: <Field extends string = string>() => required<Field, 'text'>('text'),
  /** A flag (`INTEGER CHECK (x IN (0, 1))` / `BOOLEAN`). */
  boolean: () => required<boolean, 'boolean'>('boolean'),
  /** A time (`TEXT`, ISO 8601 / `TIMESTAMPTZ`). */
  time: () => required<Date, 'timestamptz'>('timestamptz'),
};

/** A table's declaration: its fields by name (camelCase), the int64 `id` among them. */
export type Columns = { readonly id: Column<bigint, 'bigint', false> } & { readonly [field: string]: Column };

/** A field's column name: its snake_case (`sowBy`, `sow_by`). */
export type ColumnName<Field extends string> = Field extends `${infer Head}${infer Tail}`
  ? `${Head extends Lowercase<Head> ? Head : `_${Lowercase<Head>}`}${ColumnName<Tail>}`
  : Field;

/** `ColumnName` at run time. */
export function columnName(field: string): string {
  return field.replace(/[A-Z]/g, (upper) => `_${upper.toLowerCase()}`);
}

type FieldOf<C> = C extends Column<infer Field> ? Field : never;
type OptionalFields<C> = { [F in keyof C]: C[F] extends Column<unknown, ColumnType, true> ? F : never }[keyof C];
type Flat<T> = { [K in keyof T]: T[K] } & {};

/** The value a declaration describes, as the service sees it: an optional field absent, never null. */
export type ValueOf<C extends Columns> = Flat<
  { readonly [F in Exclude<keyof C, OptionalFields<C>>]: FieldOf<C[F]> } & {
    readonly [F in OptionalFields<C>]?: FieldOf<C[F]>;
  }
>;

/** `ValueOf`, known to be keyed by its int64 `id` (as every `Columns` is): `InsertOnce`'s default value. */
export type KeyedValueOf<C extends Columns> =
  ValueOf<C> extends infer Value extends { readonly id: bigint } ? Value : never;

type Nullable<C, T> = C extends Column<unknown, ColumnType, true> ? T | null : T;

/** A row as both stores read it back once `StoredColumns` has converted it: columns by name, NULL for absent. */
export type RowOf<C extends Columns> = {
  [F in keyof C & string as ColumnName<F>]: Nullable<C[F], FieldOf<C[F]>>;
};

/** A column as the query builder sees it: what each store's driver reads and takes. */
type QueryColumn<C> =
  C extends Column<infer Field, infer Type>
    ? Type extends 'bigint'
      ? Int64Column
      : Type extends 'integer'
        ? IntegerColumn
        : Type extends 'boolean'
          ? BooleanColumn
          : Type extends 'timestamptz'
            ? TimeColumn
            : Field
    : never;

type NullableColumn<C, T> =
  C extends Column<unknown, ColumnType, true>
    ? T extends KyselyColumnType<infer Select, infer Insert, infer Update>
      ? KyselyColumnType<Select | null, Insert | null, Update | null>
      : T | null
    : T;

/** The table as the query builder sees it, for `Tables`: `interface Tables { plants: TableOf<typeof PLANT_COLUMNS> }`. */
export type TableOf<C extends Columns> = {
  [F in keyof C & string as ColumnName<F>]: NullableColumn<C[F], QueryColumn<C[F]>>;
};

/**
 * A declaration's own row mapping, for a table that needs no other: each field in its column, an
 * absent optional field NULL and NULL read back absent. `sameRow`: two rows hold the same content when
 * every column does (NULL only as NULL, times by their instant); `InsertOnce` compares two values by
 * their rows, so a table that maps its own values compares what it stores, never fields it lacks.
 */
export function rowMapping<C extends Columns>(columns: C) {
  const fields = Object.entries(columns).map(([field, { type, nullable }]) => ({
    field,
    column: columnName(field),
    nullable,
    time: type === 'timestamptz',
  }));
  const taken = new Set<string>();
  for (const { field, column } of fields) {
    if (taken.has(column)) throw new Error(`Two fields share the column ${column}: rename ${field}`);
    taken.add(column);
  }
  return {
    toRow: (value: ValueOf<C>): RowOf<C> => {
      const from = value as Record<string, unknown>;
      return Object.fromEntries(fields.map(({ field, column }) => [column, from[field] ?? null])) as RowOf<C>;
    },
    fromRow: (row: RowOf<C>): ValueOf<C> => {
      const from = row as Record<string, unknown>;
      const value: Record<string, unknown> = {};
      for (const { field, column, nullable } of fields) {
        if (!(nullable && from[column] === null)) value[field] = from[column];
      }
      return value as ValueOf<C>;
    },
    sameRow: (a: RowOf<C>, b: RowOf<C>): boolean => {
      const [x, y] = [a as Record<string, unknown>, b as Record<string, unknown>];
      return fields.every(({ column, time }) =>
        time && x[column] != null && y[column] != null
          ? instant(x[column]) === instant(y[column])
          : x[column] === y[column],
      );
    },
  };
}

/** A time's instant, whether it is a `Date` or ISO 8601 text. */
function instant(time: unknown): number {
  return (time instanceof Date ? time : new Date(time as string)).getTime();
}
