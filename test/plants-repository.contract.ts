import { PlantConflictError } from '../src/plants/persistence/plant-conflict.error';
import { CreateResult, PlantsRepository } from '../src/plants/persistence/plants.repository';
import { Plant } from '../src/plants/plant';

const created = (plant: Plant): CreateResult => ({ plant, created: true });
const replayed = (plant: Plant): CreateResult => ({ plant, created: false });

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
      it('should return the plant it stored, as created', async () => {
        await expect(repository.create({ id: 1n, name: 'Monstera', tag: 'tropical' })).resolves.toEqual(
          created({ id: 1n, name: 'Monstera', tag: 'tropical' }),
        );
      });

      it('should store a plant without a tag as having none', async () => {
        await expect(repository.create({ id: 2n, name: 'Fern' })).resolves.toEqual(created({ id: 2n, name: 'Fern' }));
        await expect(repository.create({ id: 2n, name: 'Fern' })).resolves.toEqual(replayed({ id: 2n, name: 'Fern' }));
      });
    });

    describe('when the same id comes again', () => {
      it('should accept an identical plant and return the stored one', async () => {
        await repository.create({ id: 3n, name: 'Calathea', tag: 'prayer' });
        await expect(repository.create({ id: 3n, name: 'Calathea', tag: 'prayer' })).resolves.toEqual(
          replayed({ id: 3n, name: 'Calathea', tag: 'prayer' }),
        );
      });

      it.each<[string, Plant]>([
        ['another name', { id: 4n, name: 'Pothos', tag: 'prayer' }],
        ['another tag', { id: 4n, name: 'Calathea', tag: 'other' }],
        ['no tag', { id: 4n, name: 'Calathea' }],
      ])('should reject %s with PlantConflictError and keep the stored plant', async (_label, conflicting) => {
        await repository.create({ id: 4n, name: 'Calathea', tag: 'prayer' });
        await expect(repository.create(conflicting)).rejects.toThrow(PlantConflictError);
        await expect(repository.create({ id: 4n, name: 'Calathea', tag: 'prayer' })).resolves.toEqual(
          replayed({ id: 4n, name: 'Calathea', tag: 'prayer' }),
        );
      });

      it('should reject a tag where the stored plant has none', async () => {
        await repository.create({ id: 5n, name: 'Aloe' });
        await expect(repository.create({ id: 5n, name: 'Aloe', tag: '' })).rejects.toThrow(PlantConflictError);
      });
    });

    describe('int64 ids', () => {
      it.each([-(2n ** 63n), 2n ** 63n - 1n, 2n ** 53n, 2n ** 53n + 1n, -(2n ** 53n) - 1n, 0n])(
        'should keep %s exactly, apart from its neighbours',
        async (id) => {
          await repository.create({ id, name: 'exact' });
          const neighbour = id === 2n ** 63n - 1n ? id - 1n : id + 1n;
          await repository.create({ id: neighbour, name: 'neighbour' });
          await expect(repository.create({ id, name: 'neighbour' })).rejects.toThrow(new PlantConflictError(id));
          const reopened = await harness.reopen();
          await expect(reopened.create({ id, name: 'exact' })).resolves.toEqual(replayed({ id, name: 'exact' }));
        },
      );
    });

    describe('text', () => {
      it.each(['🌵 Cactus', 'Ficus 琴叶榕', 'Ünïcödé — ‘quotes’', "O'Brien; DROP TABLE plants; --", ' padded '])(
        'should keep %j exactly',
        async (name) => {
          await repository.create({ id: 6n, name, tag: name });
          const reopened = await harness.reopen();
          await expect(reopened.create({ id: 6n, name, tag: name })).resolves.toEqual(
            replayed({ id: 6n, name, tag: name }),
          );
        },
      );
    });

    describe('ping', () => {
      it('should resolve while the store is open and migrated', async () => {
        await expect(repository.ping()).resolves.toBeUndefined();
      });
    });

    describe('durability', () => {
      it('should keep stored plants across a reopen', async () => {
        await repository.create({ id: 7n, name: 'Kept', tag: 'durable' });
        const reopened = await harness.reopen();
        await expect(reopened.create({ id: 7n, name: 'Changed' })).rejects.toThrow(PlantConflictError);
        await expect(reopened.create({ id: 7n, name: 'Kept', tag: 'durable' })).resolves.toEqual(
          replayed({ id: 7n, name: 'Kept', tag: 'durable' }),
        );
      });
    });

    describe('concurrency', () => {
      it('should lose nothing among hundreds of concurrent creates', async () => {
        const ids = Array.from({ length: 300 }, (_, i) => BigInt(i) + 2n ** 60n);
        const results = await Promise.all(ids.map((id) => repository.create({ id, name: `plant ${id}` })));
        expect(results).toEqual(ids.map((id) => created({ id, name: `plant ${id}` })));
        const replays = await Promise.allSettled(ids.map((id) => repository.create({ id, name: `other ${id}` })));
        expect(
          replays.every((result) => result.status === 'rejected' && result.reason instanceof PlantConflictError),
        ).toBe(true);
      });

      it('should let exactly one of many racing creates of one id win', async () => {
        const attempts = await Promise.allSettled(
          Array.from({ length: 50 }, (_, i) => repository.create({ id: 8n, name: `racer ${i}` })),
        );
        const winners = attempts.filter((result) => result.status === 'fulfilled');
        expect(winners).toHaveLength(1);
        expect(
          attempts.filter((result) => result.status === 'rejected' && result.reason instanceof PlantConflictError),
        ).toHaveLength(49);
      });
    });
  });
}
