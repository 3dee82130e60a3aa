import { NotFoundException } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { Registry } from 'prom-client';
import { ResourceConflictError } from '../common/errors/resource-conflict.error';
import { StorageError } from '../database/storage.error';
import { PlantsRepository } from './persistence/plants.repository';
import { Plant } from './plant';
import { PlantsService } from './plants.service';

// The service hands plants through to the port whatever their fields: these stand for any.
const stored = { id: 9007199254740993n } as Plant;

describe('PlantsService', () => {
  let service: PlantsService;
  let repository: jest.Mocked<PlantsRepository>;
  let registry: Registry;

  /** `plant_store_plants_total` by outcome. */
  const counted = async (outcome: string) =>
    (await registry.getSingleMetric('plant_store_plants_total')!.get()).values.find(
      (value) => value.labels.outcome === outcome,
    )?.value ?? 0;

  beforeEach(async () => {
    repository = { create: jest.fn(), list: jest.fn(), get: jest.fn(), delete: jest.fn() };
    const moduleRef = await Test.createTestingModule({
      providers: [
        PlantsService,
        { provide: PlantsRepository, useValue: repository },
        { provide: Registry, useValue: new Registry() },
      ],
    }).compile();
    service = moduleRef.get(PlantsService);
    registry = moduleRef.get(Registry);
  });

  it('should store a new plant and answer it, answer a replay with what is stored, and count each by outcome', async () => {
    repository.create.mockResolvedValueOnce({ created: true }).mockResolvedValueOnce({ created: false });
    await expect(service.create(stored)).resolves.toBe(stored);
    await expect(service.create(stored)).resolves.toBe(stored);
    expect(repository.create.mock.calls).toEqual([[stored], [stored]]);
    expect([await counted('created'), await counted('replayed')]).toEqual([1, 1]);
  });

  it.each([
    new ResourceConflictError('A plant with id 7 already exists with a different name or tag'),
    new StorageError('The store failed', { cause: null }),
  ])('should let %s through as it is, for the exception filter to answer, and count nothing', async (failure) => {
    repository.create.mockRejectedValue(failure);
    await expect(service.create(stored)).rejects.toBe(failure);
    expect([await counted('created'), await counted('replayed')]).toEqual([0, 0]);
  });

  it('should answer the stored plant, and a 404 naming the id when there is none', async () => {
    repository.get.mockResolvedValueOnce(stored).mockResolvedValueOnce(undefined);
    await expect(service.get(stored.id)).resolves.toBe(stored);
    const missing = service.get(-9223372036854775808n);
    await expect(missing).rejects.toThrow(NotFoundException);
    await expect(missing).rejects.toThrow('No plant with id -9223372036854775808');
    expect(repository.get.mock.calls).toEqual([[stored.id], [-9223372036854775808n]]);
  });

  it('should read one more than the limit, and set next to the last id answered only when more follow', async () => {
    const [first, second, third] = [-1n, 0n, 1n].map((id) => ({ ...stored, id }));
    repository.list.mockResolvedValueOnce([first, second, third]).mockResolvedValueOnce([third]);
    await expect(service.list({ limit: 2 })).resolves.toEqual({ items: [first, second], next: 0n });
    await expect(service.list({ limit: 2, after: 0n })).resolves.toEqual({ items: [third] });
    expect(repository.list.mock.calls).toEqual([[{ limit: 3 }], [{ limit: 3, after: 0n }]]);
  });

  it('should delete a stored plant, and answer a 404 naming the id when there is none', async () => {
    repository.delete.mockResolvedValueOnce(true).mockResolvedValueOnce(false);
    await expect(service.delete(stored.id)).resolves.toBeUndefined();
    const missing = service.delete(stored.id);
    await expect(missing).rejects.toThrow(NotFoundException);
    await expect(missing).rejects.toThrow(`No plant with id ${stored.id}`);
    expect(repository.delete.mock.calls).toEqual([[stored.id], [stored.id]]);
  });
});
