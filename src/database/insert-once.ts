import { SpanKind } from '@opentelemetry/api';
import { CompiledQuery, RawBuilder, sql } from 'kysely';
import { ResourceConflictError } from '../common/errors/resource-conflict.error';
import { inSpan } from '../platform/trace-context';
import { Database } from './database';
import { PostgresDatabase } from './postgres-database';
import { retryWhileBusy, SqliteDatabase } from './sqlite-database';
import { sqliteFailure } from './sqlite-errors';
import { StatementAddition } from './statement-addition';
import { StorageError } from './storage.error';
import { Transaction } from './transaction';

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
 * `publish` (optional): the feature's events port (`CreatedEvents`, bound by `publishes(…)`), the
 * new value and its key; the event commits in the same transaction as the row, only when this call
 * stored it (never for a replay or a 409). See `insertOnceSqlite` and `insertOncePostgres`.
 *
 * Plants group-commit their creates instead (a bench-earned fast path); a new resource starts here.
 */
export function insertOnce<Row, Created = never>(
  database: Database,
  what: string,
  queries: InsertOnceQueries<Row>,
  same: (stored: Row) => boolean,
  conflictMessage: string,
  publish?: Publication<Created>,
): Promise<{ readonly created: boolean }> {
  const create: Create<Row, Created> = { what, queries, same, conflictMessage, publish };
  return database.choose({
    sqlite: (store) => insertOnceSqlite(store, create),
    postgres: (store) => insertOncePostgres(store, create),
  });
}

/** What `insertOnce` publishes when it stores the row: `created` through `events`. */
export interface Publication<Created> {
  /** The feature's port, named for its event (`GardenBedEvents`). */
  readonly events: CreatedEventsPort<Created>;
  /** The new value, as the event's body is made from it. */
  readonly created: Created;
  /** Its int64 key (the event type's `key`). */
  readonly key: bigint;
}

/** The shape of a feature's events port (`CreatedEvents` in common/events, which implements it). */
export interface CreatedEventsPort<Created> {
  created(transaction: Transaction, rows: readonly Created[]): void | Promise<void>;
  committed(transaction: Transaction): void;
  createdInStatement(inserted: RawBuilder<unknown>, rows: readonly Created[]): StatementAddition;
}

interface Create<Row, Created> {
  readonly what: string;
  readonly queries: InsertOnceQueries<Row>;
  readonly same: (stored: Row) => boolean;
  readonly conflictMessage: string;
  readonly publish?: Publication<Created>;
}

/**
 * SQLite: the insert, the read of a stored key and the event in one `BEGIN IMMEDIATE` transaction,
 * run synchronously (so no delete can slip in between). A file whose write lock another process
 * holds is tried again off the event loop for `BUSY_WAIT_MS` (`retryWhileBusy`, as plants' group
 * commit is), then is a `StorageUnavailableError` (a 503).
 */
async function insertOnceSqlite<Row, Created>(
  store: SqliteDatabase,
  { what, queries, same, conflictMessage, publish }: Create<Row, Created>,
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
              void publish?.events.created(transaction, [publish.created]);
              return { created: true, transaction };
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
  if (outcome.transaction !== undefined) publish?.events.committed(outcome.transaction);
  return { created: outcome.created };
}

/**
 * PostgreSQL: the insert autocommitted, then (when the key was taken) a read of the stored row; a
 * row deleted between the two is a new round. With `publish`, the insert runs in a short
 * transaction with the event: BEGIN, the insert, the port's statement for the row it inserted,
 * COMMIT (plants make the event part of their one insert statement instead: their fast path).
 */
async function insertOncePostgres<Row, Created>(
  store: PostgresDatabase,
  { what, queries, same, conflictMessage, publish }: Create<Row, Created>,
): Promise<{ readonly created: boolean }> {
  for (let round = 0; round < MAX_ROUNDS; round++) {
    const inserted =
      publish === undefined
        ? (await store.execute(`store ${what}`, queries.insert)).affectedRows === 1
        : await insertPublishingPostgres(store, what, queries.insert, publish);
    if (inserted) return { created: true };
    const { rows } = await store.execute(`read ${what}`, queries.stored);
    if (rows.length === 0) continue; // deleted since the insert saw it: try again
    if (same(rows[0])) return { created: false };
    throw new ResourceConflictError(conflictMessage);
  }
  throw new StorageError(`Could not store ${what}: its key kept being created and deleted concurrently`, {
    cause: undefined,
  });
}

/** BEGIN; the insert; if it stored the row, its event (the port's CTEs over that key); COMMIT. */
async function insertPublishingPostgres<Created>(
  store: PostgresDatabase,
  what: string,
  insert: CompiledQuery,
  { events, created, key }: Publication<Created>,
): Promise<boolean> {
  let committed: ((outcome: unknown) => void) | undefined;
  let outcome: unknown;
  try {
    await store.transaction(async (client) => {
      if ((await store.executeOn(client, insert)).affectedRows !== 1) return;
      const addition = events.createdInStatement(sql.table('inserted'), [created]);
      const statement = sql<{
        outcome: unknown;
      }>`WITH inserted AS (SELECT ${key.toString()}::bigint AS id)${addition.ctes}
        SELECT ${addition.outcome} AS outcome FROM inserted`.compile(store.kysely);
      outcome = (await store.executeOn(client, statement)).rows[0]?.outcome;
      committed = (value) => addition.committed(value);
    });
  } catch (error) {
    throw store.translate(error, `store ${what}`);
  }
  if (committed === undefined) return false;
  committed(outcome);
  return true;
}
