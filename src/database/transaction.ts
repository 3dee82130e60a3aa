import { CompiledQuery } from 'kysely';

/** What a statement did: the rows it returned (if any), and how many rows it changed. */
export interface StatementResult<Row> {
  readonly rows: Row[];
  readonly affectedRows: number;
}

/**
 * An open transaction of the store, handed by a feature's repository to what must commit together
 * with its writes (the plants' new-plant events, say). It does not depend on the store: a port adds
 * its statements with `execute`, built and compiled with the typed query builder (`Kysely<Tables>`).
 *
 * On SQLite a transaction is synchronous (the group commit runs from BEGIN to COMMIT in one turn of
 * the event loop): `execute` returns its result at once, and work done in it must finish before the
 * call returns. On PostgreSQL `execute` returns a promise.
 */
export abstract class Transaction {
  /** Runs one compiled statement inside this transaction; driver errors are thrown as they are. */
  abstract execute<Row>(query: CompiledQuery<Row>): StatementResult<Row> | Promise<StatementResult<Row>>;
}
