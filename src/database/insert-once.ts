import { CompiledQuery } from 'kysely';
import { ResourceConflictError } from '../common/errors/resource-conflict.error';
import { Database } from './database';
import { StorageError } from './storage.error';

/** The compiled statements of one create: an insert that does nothing when the key is taken, and a read of that key. */
export interface InsertOnceQueries<Row> {
  /** `INSERT … ON CONFLICT (key) DO NOTHING`: changes one row, or none when the key is stored. */
  readonly insert: CompiledQuery;
  /** The stored row of that key, to compare. */
  readonly stored: CompiledQuery<Row>;
}

/**
 * Rounds of insert-then-read for a key whose row is deleted between the two statements: each round
 * is a fresh race that the create loses only if another create and delete slip in between again.
 */
const MAX_ROUNDS = 5;

/**
 * The create rule of a resource whose key the client chooses, on either store: store the row, or,
 * when the key is already stored, answer a replay if the stored row is the same (`same`) and throw
 * `ResourceConflictError(conflictMessage)` (a 409) if it is not. Nothing is ever overwritten. The
 * database settles concurrent creates of one key (its primary key), so it holds across instances.
 * Resolves with whether this call stored it.
 *
 * Plants group-commit their creates instead (a bench-earned fast path); a new resource starts here.
 */
export async function insertOnce<Row>(
  database: Database,
  what: string,
  queries: InsertOnceQueries<Row>,
  same: (stored: Row) => boolean,
  conflictMessage: string,
): Promise<{ readonly created: boolean }> {
  for (let round = 0; round < MAX_ROUNDS; round++) {
    const inserted = await database.execute(`store ${what}`, queries.insert);
    if (inserted.affectedRows === 1) return { created: true };
    const { rows } = await database.execute(`read ${what}`, queries.stored);
    if (rows.length === 0) continue; // deleted since the insert saw it: try again
    if (same(rows[0])) return { created: false };
    throw new ResourceConflictError(conflictMessage);
  }
  throw new StorageError(`Could not store ${what}: its key kept being created and deleted concurrently`, {
    cause: undefined,
  });
}
