import { setImmediate as nextTurn } from 'node:timers/promises';
import { RecoverCursor, RecoverRange } from '../deliveries';
import { DeliveryLog } from '../persistence/delivery-log';

/**
 * Failed deliveries a recover brings back per batch: one read and one update, each autocommitted. On
 * SQLite a batch holds the event loop while it runs, its commit's fsync included. At this size a batch
 * costs little more than its commit (bench/README.md, "Decisions"), so a request waits one short batch at
 * most while few commits bring a large backlog back.
 */
export const RECOVER_BATCH_SIZE = 500;

export interface RecoverOutcome {
  /** Failed deliveries made pending. */
  readonly queued: number;
  /** `stop` came before the last batch: what is left stays failed, for the next recover. */
  readonly stopped: boolean;
}

/**
 * A recover (API.md: the recover route), batch by batch until none is left. Between two batches
 * the event loop runs whatever waits (`setImmediate`), and `stop` (the shutdown signal) ends it: a
 * shutdown waits for one batch at most. What a batch committed stays committed, and a recover again
 * takes up the rest, since only failed deliveries change. `queued` is told after each batch that
 * made some pending (the dispatcher starts on them while the rest follows).
 */
export async function recoverInBatches(
  log: DeliveryLog,
  endpointId: string,
  range: RecoverRange,
  options: { readonly batchSize: number; readonly stop: AbortSignal; readonly queued: () => void },
): Promise<RecoverOutcome> {
  let queued = 0;
  let from: RecoverCursor | undefined;
  do {
    if (options.stop.aborted) return { queued, stopped: true };
    const batch = await log.recoverBatch(endpointId, range, options.batchSize, from);
    queued += batch.queued;
    if (batch.queued > 0) options.queued();
    from = batch.next;
    if (from !== undefined) await nextTurn();
  } while (from !== undefined);
  return { queued, stopped: false };
}
