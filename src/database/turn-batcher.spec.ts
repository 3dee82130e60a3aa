import { TurnBatcher } from './turn-batcher';

const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

/** A batcher whose commit records each batch and answers each item with itself doubled. */
function recording(options?: { untilQuiet?: boolean }, maxBatchSize = 500) {
  const batches: number[][] = [];
  const batcher = new TurnBatcher<number, number>(
    (items) => {
      batches.push([...items]);
      return items.map((item) => item * 2);
    },
    maxBatchSize,
    options,
  );
  return { batches, batcher };
}

/** Submits `first` now and `second` on the next turn of the event loop; resolves with every result. */
async function overTwoTurns(batcher: TurnBatcher<number, number>, first: number[], second: number[]) {
  const results = first.map((item) => batcher.submit(item));
  await nextTurn();
  results.push(...second.map((item) => batcher.submit(item)));
  return Promise.all(results);
}

describe('TurnBatcher', () => {
  it('commits the items of one turn together, and a later turn apart', async () => {
    const { batches, batcher } = recording();
    expect(await overTwoTurns(batcher, [1, 2], [3])).toEqual([2, 4, 6]);
    expect(batches).toEqual([[1, 2], [3]]);
  });

  afterEach(() => jest.restoreAllMocks());

  it('untilQuiet: keeps gathering while each turn brings more, and commits after a turn that brings none', async () => {
    jest.spyOn(performance, 'now').mockReturnValue(0); // however slow the machine, within a commit's time
    const { batches, batcher } = recording({ untilQuiet: true });
    expect(await overTwoTurns(batcher, [1, 2], [3])).toEqual([2, 4, 6]);
    expect(batches).toEqual([[1, 2, 3]]);
  });

  it('untilQuiet: gathers no longer than the previous commit held the event loop', async () => {
    let now = 0;
    jest.spyOn(performance, 'now').mockImplementation(() => (now += 1000)); // each look: a second later
    const { batches, batcher } = recording({ untilQuiet: true });
    expect(await overTwoTurns(batcher, [1, 2], [3])).toEqual([2, 4, 6]);
    expect(batches).toEqual([[1, 2], [3]]);
  });

  it('untilQuiet: times a commit until it settles, not only until it returns', async () => {
    let now = 0;
    jest.spyOn(performance, 'now').mockImplementation(() => now);
    const batches: number[][] = [];
    const batcher = new TurnBatcher<number, number>(
      (items) => {
        batches.push([...items]);
        // Returns at once and settles a second later (an SQLite COMMIT in a microtask after the work's own).
        return Promise.resolve().then(() => {
          now += 1000;
          return items.map((item) => item * 2);
        });
      },
      500,
      { untilQuiet: true },
    );
    expect(await batcher.submit(1)).toBe(2);
    // That second is the next batch's time to gather: the item of the next turn joins it.
    expect(await overTwoTurns(batcher, [2], [3])).toEqual([4, 6]);
    expect(batches).toEqual([[1], [2, 3]]);
  });

  it('untilQuiet: a lone item is committed without a timer', async () => {
    jest.useFakeTimers({ doNotFake: ['setImmediate', 'nextTick', 'queueMicrotask', 'performance'] });
    try {
      const { batches, batcher } = recording({ untilQuiet: true });
      expect(await batcher.submit(7)).toBe(14);
      expect(batches).toEqual([[7]]);
    } finally {
      jest.useRealTimers();
    }
  });

  it('untilQuiet: never more than maxBatchSize items in one commit', async () => {
    const { batches, batcher } = recording({ untilQuiet: true }, 2);
    expect(await overTwoTurns(batcher, [1, 2, 3], [4])).toEqual([2, 4, 6, 8]);
    expect(batches.map((batch) => batch.length).every((size) => size <= 2)).toBe(true);
    expect(batches.flat()).toEqual([1, 2, 3, 4]);
  });
});
