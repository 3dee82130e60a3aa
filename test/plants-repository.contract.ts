import { ResourceConflictError } from '../src/common/errors/resource-conflict.error';
import { conflictMessage } from '../src/common/resources/resource-name';
import { PlantsRepository } from '../src/plants/persistence/plants.repository';
import { Plant } from '../src/plants/plant';

/** What `create` resolves with: a new plant stored, or the same one found stored (a replay). */
const CREATED = { created: true };
const REPLAYED = { created: false };
const conflict = (id: bigint) =>
  new ResourceConflictError(conflictMessage('plant', id, { differs: 'a different name or tag' }));

/** Makes a repository over an empty store, and the means to reopen and dispose of it. */
export interface RepositoryHarness {
  repository: PlantsRepository;
  /** Closes the repository and opens a new one over the same store. */
  reopen(): Promise<PlantsRepository>;
  dispose(): Promise<void>;
}

/**
 * The behaviour every `PlantsRepository` adapter must have, written once and run against each
 * store. Each test starts from an empty store.
 */
export function describePlantsRepositoryContract(name: string, makeHarness: () => Promise<RepositoryHarness>): void {
  describe(`PlantsRepository contract: ${name}`, () => {
    let harness: RepositoryHarness;
    let repository: PlantsRepository;

    beforeEach(async () => {
      harness = await makeHarness();
      repository = harness.repository;
    });
    afterEach(() => harness.dispose());

    describe('create', () => {
      it('should store a new plant, as created', async () => {
        await expect(repository.create({ id: 1n, name: 'Monstera', tag: 'tropical' })).resolves.toEqual(CREATED);
      });

      it('should store a plant without a tag as having none', async () => {
        await expect(repository.create({ id: 2n, name: 'Fern' })).resolves.toEqual(CREATED);
        await expect(repository.create({ id: 2n, name: 'Fern' })).resolves.toEqual(REPLAYED);
      });
    });

    describe('when the same id comes again', () => {
      it('should accept an identical plant as a replay', async () => {
        await repository.create({ id: 3n, name: 'Calathea', tag: 'prayer' });
        await expect(repository.create({ id: 3n, name: 'Calathea', tag: 'prayer' })).resolves.toEqual(REPLAYED);
      });

      it.each<[string, Plant]>([
        ['another name', { id: 4n, name: 'Pothos', tag: 'prayer' }],
        ['another tag', { id: 4n, name: 'Calathea', tag: 'other' }],
        ['no tag', { id: 4n, name: 'Calathea' }],
      ])('should reject %s with ResourceConflictError and keep the stored plant', async (_label, conflicting) => {
        await repository.create({ id: 4n, name: 'Calathea', tag: 'prayer' });
        await expect(repository.create(conflicting)).rejects.toThrow(ResourceConflictError);
        await expect(repository.create({ id: 4n, name: 'Calathea', tag: 'prayer' })).resolves.toEqual(REPLAYED);
      });

      it('should reject a tag where the stored plant has none', async () => {
        await repository.create({ id: 5n, name: 'Aloe' });
        await expect(repository.create({ id: 5n, name: 'Aloe', tag: '' })).rejects.toThrow(ResourceConflictError);
      });
    });

    describe('int64 ids', () => {
      it.each([-(2n ** 63n), 2n ** 63n - 1n, 2n ** 53n, 2n ** 53n + 1n, -(2n ** 53n) - 1n, 0n])(
        'should keep %s exactly, apart from its neighbours',
        async (id) => {
          await repository.create({ id, name: 'exact' });
          const neighbour = id === 2n ** 63n - 1n ? id - 1n : id + 1n;
          await repository.create({ id: neighbour, name: 'neighbour' });
          await expect(repository.create({ id, name: 'neighbour' })).rejects.toThrow(conflict(id));
          const reopened = await harness.reopen();
          await expect(reopened.create({ id, name: 'exact' })).resolves.toEqual(REPLAYED);
        },
      );
    });

    describe('text', () => {
      it.each(['🌵 Cactus', 'Ficus 琴叶榕', 'Ünïcödé — ‘quotes’', "O'Brien; DROP TABLE plants; --", ' padded '])(
        'should keep %j exactly',
        async (name) => {
          await repository.create({ id: 6n, name, tag: name });
          const reopened = await harness.reopen();
          await expect(reopened.create({ id: 6n, name, tag: name })).resolves.toEqual(REPLAYED);
        },
      );
    });

    describe('list', () => {
      const EXTREMES = [2n ** 63n - 1n, -(2n ** 63n), 0n, -1n, 2n ** 53n + 1n, 2n ** 53n, -(2n ** 53n) - 1n, 7n];
      const sorted = [...EXTREMES].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
      const plantOf = (id: bigint): Plant =>
        id % 2n === 0n ? { id, name: `p${id}`, tag: 'even' } : { id, name: `p${id}` };

      it('should return an empty page from an empty store', async () => {
        await expect(repository.list({ limit: 100 })).resolves.toEqual([]);
        await expect(repository.list({ limit: 100, after: 0n })).resolves.toEqual([]);
      });

      it('should return plants in signed id order with exact int64 ids', async () => {
        for (const id of EXTREMES) await repository.create(plantOf(id));
        await expect(repository.list({ limit: 100 })).resolves.toEqual(sorted.map(plantOf));
      });

      it('should return at most limit plants, strictly after the cursor', async () => {
        for (const id of EXTREMES) await repository.create(plantOf(id));
        await expect(repository.list({ limit: 3 })).resolves.toEqual(sorted.slice(0, 3).map(plantOf));
        await expect(repository.list({ limit: 3, after: -1n })).resolves.toEqual([0n, 7n, 2n ** 53n].map(plantOf));
        await expect(repository.list({ limit: 3, after: 2n ** 53n })).resolves.toEqual(
          [2n ** 53n + 1n, 2n ** 63n - 1n].map(plantOf),
        );
        await expect(repository.list({ limit: 3, after: 2n ** 63n - 1n })).resolves.toEqual([]);
        await expect(repository.list({ limit: 1, after: -(2n ** 63n) })).resolves.toEqual([plantOf(-(2n ** 53n) - 1n)]);
      });

      it('should walk the whole store page by page, each plant exactly once', async () => {
        const ids = Array.from({ length: 250 }, (_, i) => BigInt(i * 7919) - 900_000n);
        await Promise.all(ids.map((id) => repository.create(plantOf(id))));
        const seen: bigint[] = [];
        let after: bigint | undefined;
        for (;;) {
          const page = await repository.list({ limit: 64, after });
          if (page.length === 0) break;
          seen.push(...page.map((plant) => plant.id));
          after = page[page.length - 1].id;
        }
        expect(seen).toEqual(ids);
      });
    });

    describe('get', () => {
      it.each([-(2n ** 63n), 2n ** 63n - 1n, 2n ** 53n + 1n, 0n])(
        'should return the plant stored under %s',
        async (id) => {
          await repository.create({ id, name: 'exact', tag: 'kept' });
          await repository.create({ id: id === -(2n ** 63n) ? id + 1n : id - 1n, name: 'neighbour' });
          await expect(repository.get(id)).resolves.toEqual({ id, name: 'exact', tag: 'kept' });
        },
      );

      it('should return a plant without a tag as having none, and undefined for an unknown id', async () => {
        await repository.create({ id: 2n ** 53n, name: 'untagged' });
        await expect(repository.get(2n ** 53n)).resolves.toEqual({ id: 2n ** 53n, name: 'untagged' });
        await expect(repository.get(2n ** 53n + 1n)).resolves.toBeUndefined();
      });
    });

    describe('delete', () => {
      it('should delete a stored plant once, and report an unknown one', async () => {
        await repository.create({ id: 2n ** 63n - 1n, name: 'max' });
        await repository.create({ id: 2n ** 63n - 2n, name: 'neighbour' });
        await expect(repository.delete(2n ** 63n - 1n)).resolves.toBe(true);
        await expect(repository.delete(2n ** 63n - 1n)).resolves.toBe(false);
        await expect(repository.get(2n ** 63n - 1n)).resolves.toBeUndefined();
        await expect(repository.list({ limit: 10 })).resolves.toEqual([{ id: 2n ** 63n - 2n, name: 'neighbour' }]);
        await expect(repository.delete(-(2n ** 63n))).resolves.toBe(false);
      });

      it('should make a create after a delete a new create, with nothing of the old plant left', async () => {
        await repository.create({ id: 9n, name: 'Old', tag: 'gone' });
        await repository.delete(9n);
        await expect(repository.create({ id: 9n, name: 'New' })).resolves.toEqual(CREATED);
        await expect(repository.create({ id: 9n, name: 'Old', tag: 'gone' })).rejects.toThrow(ResourceConflictError);
        const reopened = await harness.reopen();
        await expect(reopened.get(9n)).resolves.toEqual({ id: 9n, name: 'New' });
      });

      it('should keep a delete across a reopen', async () => {
        await repository.create({ id: 10n, name: 'Deleted' });
        await repository.delete(10n);
        const reopened = await harness.reopen();
        await expect(reopened.get(10n)).resolves.toBeUndefined();
      });

      it('should settle racing creates and deletes of one id in some order, never failing', async () => {
        for (let round = 0; round < 20; round++) {
          const id = 11n + BigInt(round);
          const [createA, deleted, createB] = await Promise.allSettled([
            repository.create({ id, name: 'A' }),
            repository.delete(id),
            repository.create({ id, name: 'B' }),
          ]);
          expect(createA.status === 'fulfilled' || createA.reason instanceof ResourceConflictError).toBe(true);
          expect(createB.status === 'fulfilled' || createB.reason instanceof ResourceConflictError).toBe(true);
          expect(deleted.status).toBe('fulfilled');
          const stored = await repository.get(id);
          // Whatever is left was created by one of the two and matches what that create answered.
          if (stored !== undefined) {
            const winner = stored.name === 'A' ? createA : createB;
            expect(winner).toEqual({ status: 'fulfilled', value: CREATED });
          }
        }
      });
    });

    describe('durability', () => {
      it('should keep stored plants across a reopen', async () => {
        await repository.create({ id: 7n, name: 'Kept', tag: 'durable' });
        const reopened = await harness.reopen();
        await expect(reopened.create({ id: 7n, name: 'Changed' })).rejects.toThrow(ResourceConflictError);
        await expect(reopened.create({ id: 7n, name: 'Kept', tag: 'durable' })).resolves.toEqual(REPLAYED);
      });
    });

    describe('concurrency', () => {
      it('should lose nothing among hundreds of concurrent creates', async () => {
        const ids = Array.from({ length: 300 }, (_, i) => BigInt(i) + 2n ** 60n);
        const results = await Promise.all(ids.map((id) => repository.create({ id, name: `plant ${id}` })));
        expect(results).toEqual(ids.map(() => CREATED));
        const replays = await Promise.allSettled(ids.map((id) => repository.create({ id, name: `other ${id}` })));
        expect(
          replays.every((result) => result.status === 'rejected' && result.reason instanceof ResourceConflictError),
        ).toBe(true);
      });

      it('should let exactly one of many racing creates of one id win', async () => {
        const attempts = await Promise.allSettled(
          Array.from({ length: 50 }, (_, i) => repository.create({ id: 8n, name: `racer ${i}` })),
        );
        const winners = attempts.filter((result) => result.status === 'fulfilled');
        expect(winners).toHaveLength(1);
        expect(
          attempts.filter((result) => result.status === 'rejected' && result.reason instanceof ResourceConflictError),
        ).toHaveLength(49);
      });
    });
  });
}
