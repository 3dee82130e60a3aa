import { Batcher, BatchingResult } from 'promise-batcher';

/**
 * Group commit for the adapters: the items submitted in one turn of the event loop are handed to
 * `commit` as one batch (at most `maxBatchSize`), and each submitter gets its own result or error.
 * No timer: a lone item waits for nothing; under load, what arrived together commits together.
 *
 * `untilQuiet` keeps gathering, a turn at a time, while the last turn brought more items; it commits
 * after the first turn that brought none, at `maxBatchSize`, or once the batch has gathered for as long
 * as the previous commit took to settle (so waiting never costs an item more than one more commit). For
 * a commit that blocks the event loop (SQLite's fsync, in a microtask after the work's own): the
 * requests that arrived while the previous commit held it, and those its answers bring back at once,
 * share one commit instead of alternating between two half-size ones; a lone item waits one turn more.
 */
export class TurnBatcher<Item, Result> {
  private readonly batcher: Batcher<Item, Result>;
  private queued = 0; // submitted, not yet handed to `commit`
  private lastCommitMs = 1; // how long the last commit took, from its call until it settled

  constructor(
    commit: (items: readonly Item[]) => readonly BatchingResult<Result>[] | Promise<readonly BatchingResult<Result>[]>,
    private readonly maxBatchSize: number,
    { untilQuiet = false }: { untilQuiet?: boolean } = {},
  ) {
    this.batcher = new Batcher({
      batchingFunction: (items: readonly Item[]) => {
        this.queued -= items.length;
        if (!untilQuiet) return commit(items);
        // Until it settles: an SQLite commit whose work awaits (its events' publish) runs its COMMIT and
        // fsync in a microtask, after `commit` has returned.
        const started = performance.now();
        const timed = () => void (this.lastCommitMs = performance.now() - started);
        const outcome = commit(items);
        if (!(outcome instanceof Promise)) {
          timed();
          return outcome;
        }
        return outcome.finally(timed);
      },
      maxBatchSize,
      delayFunction: untilQuiet ? () => this.untilQuiet() : nextTurn,
    });
  }

  submit(item: Item): Promise<Result> {
    this.queued++;
    const result = this.batcher.getResult(item);
    this.batcher.send(); // skips promise-batcher's timer; the delay function still gathers one turn
    return result;
  }

  /** Resolves when no batch is in flight: for shutdown, before the connection closes. */
  idle(): Promise<void> {
    return this.batcher.idlePromise();
  }

  private untilQuiet(): Promise<void> {
    const until = performance.now() + this.lastCommitMs;
    return new Promise<void>((resolve) => {
      let seen = -1;
      const look = () => {
        if (this.queued === seen || this.queued >= this.maxBatchSize || performance.now() >= until) return resolve();
        seen = this.queued;
        setImmediate(look);
      };
      setImmediate(look);
    });
  }
}

const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));
