import { Batcher, BatchingResult } from 'promise-batcher';

/**
 * Group commit for the adapters: the items submitted in one turn of the event loop are handed to
 * `commit` as one batch (at most `maxBatchSize`), and each submitter gets its own result or error.
 * No timer: a lone item waits for nothing; under load, what arrived together commits together.
 */
export class TurnBatcher<Item, Result> {
  private readonly batcher: Batcher<Item, Result>;

  constructor(
    commit: (items: readonly Item[]) => readonly BatchingResult<Result>[] | Promise<readonly BatchingResult<Result>[]>,
    maxBatchSize: number,
  ) {
    this.batcher = new Batcher({
      batchingFunction: commit,
      maxBatchSize,
      delayFunction: () => new Promise<void>((resolve) => setImmediate(resolve)),
    });
  }

  submit(item: Item): Promise<Result> {
    const result = this.batcher.getResult(item);
    this.batcher.send(); // skips promise-batcher's timer; the delay function still gathers one turn
    return result;
  }

  /** Resolves when no batch is in flight: for shutdown, before the connection closes. */
  idle(): Promise<void> {
    return this.batcher.idlePromise();
  }
}
