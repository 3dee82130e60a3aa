import { SpanKind } from '@opentelemetry/api';
import { CompiledQuery } from 'kysely';
import { ResourceConflictError } from '../common/errors/resource-conflict.error';
import { inSpan } from '../platform/trace-context';
import { Database } from './database';
import { PostgresDatabase } from './postgres-database';
import { retryWhileBusy, SqliteDatabase } from './sqlite-database';
import { sqliteFailure } from './sqlite-errors';
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
export function insertOnce<Row>(
  database: Database,
  what: string,
  queries: InsertOnceQueries<Row>,
  same: (stored: Row) => boolean,
  conflictMessage: string,
): Promise<{ readonly created: boolean }> {
  const create: Create<Row> = { what, queries, same, conflictMessage };
  return database.choose({
    sqlite: (store) => insertOnceSqlite(store, create),
    postgres: (store) => insertOncePostgres(store, create),
  });
}

interface Create<Row> {
  readonly what: string;
  readonly queries: InsertOnceQueries<Row>;
  readonly same: (stored: Row) => boolean;
  readonly conflictMessage: string;
}

/**
 * SQLite: the insert and the read of a stored key in one `BEGIN IMMEDIATE` transaction,
 * run synchronously (so no delete can slip in between). A file whose write lock another process
 * holds is tried again off the event loop for `BUSY_WAIT_MS` (`retryWhileBusy`, as plants' group
 * commit is), then is a `StorageUnavailableError` (a 503).
 */
async function insertOnceSqlite<Row>(
  store: SqliteDatabase,
  { what, queries, same, conflictMessage }: Create<Row>,
): Promise<{ readonly created: boolean }> {
  const outcome = await retryWhileBusy(() =>
    inSpan(
      `sqlite store ${what}`,
      { kind: SpanKind.CLIENT, attributes: { 'db.system': 'sqlite', 'db.operation': 'transaction' } },
      undefined,
      () => {
        try {
          return store.transaction((transaction) => {
            if (transaction.execute(queries.insert).affectedRows === 1) {
              return { created: true };
            }
            const [stored] = transaction.execute(queries.stored).rows;
            if (stored !== undefined && same(stored)) return { created: false };
            // The insert found the key taken, and nothing between could delete it: a different row.
            return { conflict: true };
          });
        } catch (error) {
          throw sqliteFailure(`SQLite failed to store ${what}`, error);
        }
      },
    ),
  );
  if ('conflict' in outcome) throw new ResourceConflictError(conflictMessage);
  return { created: outcome.created };
}

/**
 * PostgreSQL: the insert autocommitted, then (when the key was taken) a read of the stored row; a
 * row deleted between the two is a new round.
 */
async function insertOncePostgres<Row>(
  store: PostgresDatabase,
  { what, queries, same, conflictMessage }: Create<Row>,
): Promise<{ readonly created: boolean }> {
  for (let round = 0; round < MAX_ROUNDS; round++) {
    const inserted = await store.execute(`store ${what}`, queries.insert);
    if (inserted.affectedRows === 1) return { created: true };
    const { rows } = await store.execute(`read ${what}`, queries.stored);
    if (rows.length === 0) continue; // deleted since the insert saw it: try again
    if (same(rows[0])) return { created: false };
    throw new ResourceConflictError(conflictMessage);
  }
  throw new StorageError(`Could not store ${what}: its key kept being created and deleted concurrently`, {
    cause: undefined,
  });
}
