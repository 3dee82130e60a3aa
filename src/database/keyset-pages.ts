import { Kysely } from 'kysely';
import { prepareQuery } from './prepared-query';
import { Tables } from './tables';

type AnyTables = Record<string, Record<string, unknown>>;
type StoredRow = Record<string, unknown>;

/**
 * The keyset pages of a table keyed by an int64 `id`, in id order: the first page, and the page after a
 * cursor. Each is a range search on the primary key, whatever its depth, never an OFFSET (plants'
 * repository tests read their plans); each is compiled once (`prepareQuery`), as it runs once per request.
 */
export function keysetPageQueries(kysely: Kysely<Tables>, table: string, columns: readonly string[]) {
  const db = kysely.$extendTables<AnyTables>();
  return {
    first: prepareQuery<{ limit: number }, StoredRow>(({ limit }) =>
      db.selectFrom(table).select(columns).orderBy('id').limit(limit).compile(),
    ),
    after: prepareQuery<{ after: bigint; limit: number }, StoredRow>(({ after, limit }) =>
      db.selectFrom(table).select(columns).where('id', '>', after).orderBy('id').limit(limit).compile(),
    ),
  };
}
