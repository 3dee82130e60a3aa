import { SpanKind, trace } from '@opentelemetry/api';
import { contextOf, inSpan, passContext } from '../tracing/trace-context';
import { EventsPort, Keyed, Outcome, StoredRow, TableOnStore, Write } from './insert-once-table';
import { Columns } from './columns';
import { sqliteFailure } from './sqlite-errors';
import { StorageUnavailableError } from './storage-unavailable.error';
import { StorageError } from './storage.error';
import { StatementResult, Transaction } from './transaction';

/**
 * SQLite: the batch's writes in one `BEGIN IMMEDIATE` transaction (a busy file retried off the event loop),
 * with their events, one commit and one fsync. When the file cannot be written (still busy, full,
 * failing), every write fails with a 503; any other failure is taken to be one write's own: each runs alone.
 */
export async function storeBatchSqlite<C extends Columns, Value extends Keyed>(
  on: TableOnStore<C, Value>,
  writes: readonly Write<Value>[],
): Promise<Outcome<Value>[]> {
  const { what, groupCommit } = on.table;
  // One span for the transaction, in the trace of its first traced write, linked to the others'.
  const traced = writes.flatMap((write) => contextOf('create' in write ? write.create : write) ?? []);
  const linked = traced.slice(1).flatMap((other) => trace.getSpanContext(other) ?? []);
  try {
    return await inSpan(
      groupCommit ? 'sqlite group commit' : `sqlite store ${what}`,
      {
        kind: SpanKind.CLIENT,
        attributes: { 'db.system': 'sqlite', 'db.operation': 'transaction', 'plant_store.batch_size': writes.length },
        links: linked.map((context) => ({ context })),
      },
      traced[0],
      () => on.database.transaction(`store ${what}`, (tx) => apply(on, tx, writes)),
    );
  } catch (error) {
    if (writes.length === 1 || error instanceof StorageUnavailableError) {
      // The driver's error (a port error's cause), or what an events port threw.
      const cause = error instanceof StorageError || error instanceof StorageUnavailableError ? error.cause : error;
      const failed = (write: Write<Value>) => `SQLite failed to ${'create' in write ? 'store' : 'delete'} ${what}`;
      return writes.map((write) => sqliteFailure(failed(write), cause));
    }
    const alone: Outcome<Value>[] = [];
    for (const write of writes) alone.push(...(await storeBatchSqlite(on, [write])));
    return alone;
  }
}

/**
 * The writes in order, then their events, in the same order (each run of creates or of deletes one
 * publish): every statement runs at once inside the transaction, so no other connection comes between
 * an insert and its read, and an event exists exactly when its row was inserted or deleted.
 */
async function apply<C extends Columns, Value extends Keyed>(
  { table, columns, queries, fromStored }: TableOnStore<C, Value>,
  tx: Transaction,
  writes: readonly Write<Value>[],
): Promise<Outcome<Value>[]> {
  const run = <R>(query: Parameters<Transaction['execute']>[0]) => tx.execute(query) as StatementResult<R>;
  const { toRow, same, conflict } = table;
  const runs: { port?: EventsPort<Value>; items: Value[] }[] = [];
  const changed = (port: EventsPort<Value> | undefined, item: Value) => {
    const last = runs.at(-1);
    if (last !== undefined && last.port === port) last.items.push(item);
    else runs.push({ port, items: [item] });
  };
  const outcomes = writes.map((write): Outcome<Value> => {
    if ('remove' in write) {
      // SQLite runs DELETE … RETURNING as a reader: what it returns says whether a row went, not affectedRows.
      const [row] = run<StoredRow>(queries.remove({ id: write.remove })).rows;
      if (row === undefined) return false;
      changed(table.deleted, passContext(write, fromStored(row)));
      return true;
    }
    const value = write.create;
    if (run(queries.insert(columns.stored(toRow(value)))).affectedRows === 1) {
      changed(table.created, value);
      return { value, created: true };
    }
    const stored = fromStored(run<StoredRow>(queries.byId({ id: value.id })).rows[0]);
    return same(stored, value) ? { value: stored, created: false } : conflict(value);
  });
  for (const { port, items } of runs) await port?.publish(tx, items);
  return outcomes;
}
