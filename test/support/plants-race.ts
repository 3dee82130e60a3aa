import { setTimeout as sleep } from 'node:timers/promises';
import { request } from './http';

const JITTER_MS = 8;

export type RaceOperation = { kind: 'create'; name: string } | { kind: 'delete' };

/** Two creates with the same content, one with other content and two deletes, all of one id at once. */
export const CREATE_DELETE_RACE: readonly RaceOperation[] = [
  { kind: 'create', name: 'A' },
  { kind: 'delete' },
  { kind: 'create', name: 'B' },
  { kind: 'create', name: 'A' },
  { kind: 'delete' },
];

export interface RaceOutcome {
  id: bigint;
  /** Whether some order of the operations, one at a time, gives exactly these statuses and this content. */
  consistent: boolean;
  statuses: number[];
  /** The name stored afterwards, if any. */
  stored?: string;
}

/** Every order of `items`. */
function* permutations<T>(items: readonly T[]): Generator<T[]> {
  if (items.length <= 1) {
    yield [...items];
    return;
  }
  for (let i = 0; i < items.length; i++) {
    const rest = [...items.slice(0, i), ...items.slice(i + 1)];
    for (const tail of permutations(rest)) yield [items[i], ...tail];
  }
}

/** The statuses and the final content the store must give for the operations in this order, from empty. */
function runInOrder(order: readonly number[], operations: readonly RaceOperation[]) {
  let stored: string | undefined;
  const statuses: number[] = [];
  for (const index of order) {
    const operation = operations[index];
    if (operation.kind === 'delete') {
      statuses[index] = stored === undefined ? 404 : 204;
      stored = undefined;
    } else if (stored === undefined || stored === operation.name) {
      statuses[index] = 200;
      stored = operation.name;
    } else {
      statuses[index] = 409;
    }
  }
  return { statuses, stored };
}

/**
 * Sends every operation on `id` at once (each to `urlFor(i)`: one instance or several), then reads
 * what is stored, and checks that some order of running them one by one gives exactly those answers
 * and that content: the store behaved as if the racing requests had come one at a time.
 */
export async function settleRace(
  urlFor: (index: number) => string,
  id: bigint,
  operations: readonly RaceOperation[],
): Promise<RaceOutcome> {
  // Each starts after its own short random delay, so the order in which they reach the store
  // differs from round to round instead of always being the order they are listed in.
  const responses = await Promise.all(
    operations.map(async (operation, i) => {
      await sleep(Math.random() * JITTER_MS);
      return operation.kind === 'create'
        ? request(`${urlFor(i)}/plants`, { body: `{"id":${id},"name":"${operation.name}"}` })
        : request(`${urlFor(i)}/plants/${id}`, { method: 'DELETE' });
    }),
  );
  const statuses = responses.map((res) => res.status);
  const after = await request(`${urlFor(0)}/plants/${id}`, { method: 'GET' });
  const stored = after.status === 200 ? (after.body as { name: string }).name : undefined;
  for (const order of permutations(operations.map((_operation, i) => i))) {
    const expected = runInOrder(order, operations);
    if (expected.stored === stored && expected.statuses.every((status, i) => status === statuses[i])) {
      return { id, consistent: true, statuses, stored };
    }
  }
  return { id, consistent: false, statuses, stored };
}

/** Every round came out as some serial order would have, none with a 5xx, and not all in one order. */
export function expectSettledInSomeOrder(outcomes: readonly RaceOutcome[]): void {
  expect(outcomes.filter((outcome) => !outcome.consistent)).toEqual([]);
  expect(outcomes.flatMap((outcome) => outcome.statuses).filter((status) => status >= 500)).toEqual([]);
  // They really raced: the rounds did not all come out in one order.
  expect(new Set(outcomes.map((outcome) => outcome.statuses.join())).size).toBeGreaterThan(1);
}
