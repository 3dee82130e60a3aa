import { ConflictException, NotFoundException } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { Registry } from 'prom-client';
import { PlantsMetrics } from './plants.metrics';
import { PlantConflictError } from './persistence/plant-conflict.error';
import { PlantsRepository } from './persistence/plants.repository';
import { StorageTimeoutError } from '../database/storage-timeout.error';
import { StorageUnavailableError } from '../database/storage-unavailable.error';
import { StorageError } from '../database/storage.error';
import { PlantsService } from './plants.service';

describe('PlantsService', () => {
  let service: PlantsService;
  let repository: jest.Mocked<PlantsRepository>;
  let registry: Registry;

  const counted = async (name: string, labels: Record<string, string>) => {
    const metric = await registry.getSingleMetric(name)!.get();
    return metric.values.find((value) => Object.entries(labels).every(([k, v]) => value.labels[k] === v))?.value ?? 0;
  };

  beforeEach(async () => {
    repository = { create: jest.fn(), list: jest.fn(), get: jest.fn(), delete: jest.fn() };
    const moduleRef = await Test.createTestingModule({
      providers: [
        PlantsService,
        PlantsMetrics,
        { provide: Registry, useValue: new Registry() },
        { provide: PlantsRepository, useValue: repository },
      ],
    }).compile();
    service = moduleRef.get(PlantsService);
    registry = moduleRef.get(Registry);
  });

  describe('create', () => {
    it('should return the plant the repository stored and count it as created', async () => {
      const plant = { id: 9007199254740993n, name: 'Monstera', tag: 'tropical' };
      repository.create.mockResolvedValue({ plant, created: true });
      await expect(service.create(plant)).resolves.toEqual(plant);
      expect(repository.create).toHaveBeenCalledWith(plant);
      expect(await counted('plant_store_plants_total', { outcome: 'created' })).toBe(1);
    });

    it('should count an identical replay as replayed', async () => {
      repository.create.mockResolvedValue({ plant: { id: 1n, name: 'x' }, created: false });
      await expect(service.create({ id: 1n, name: 'x' })).resolves.toEqual({ id: 1n, name: 'x' });
      expect(await counted('plant_store_plants_total', { outcome: 'replayed' })).toBe(1);
      expect(await counted('plant_store_plants_total', { outcome: 'created' })).toBe(0);
    });

    it('should turn a conflicting id into a 409 that names the id', async () => {
      repository.create.mockRejectedValue(new PlantConflictError(7n));
      const result = service.create({ id: 7n, name: 'Other' });
      await expect(result).rejects.toThrow(ConflictException);
      await expect(result).rejects.toThrow('A plant with id 7 already exists with a different name or tag');
    });

    it.each([
      new StorageUnavailableError('PostgreSQL is unavailable', { cause: null }),
      new StorageTimeoutError('PostgreSQL did not answer within 5 ms', { cause: null }),
      new StorageError('SQLite failed to store a plant', { cause: new Error('disk I/O error') }),
    ])('should let %s through unchanged, for the exception filter to answer', async (failure) => {
      repository.create.mockRejectedValue(failure);
      await expect(service.create({ id: 1n, name: 'x' })).rejects.toBe(failure);
      expect(await counted('plant_store_plants_total', { outcome: 'created' })).toBe(0);
    });
  });

  describe('list', () => {
    const plants = (...ids: bigint[]) => ids.map((id) => ({ id, name: `plant ${id}` }));

    it('should ask for one plant more than the limit and give no next cursor when it is not there', async () => {
      repository.list.mockResolvedValue(plants(1n, 2n));
      await expect(service.list({ limit: 2, after: -5n })).resolves.toEqual({ items: plants(1n, 2n) });
      expect(repository.list).toHaveBeenCalledWith({ limit: 3, after: -5n });
    });

    it('should drop the extra plant and continue after the last one returned', async () => {
      repository.list.mockResolvedValue(plants(2n ** 63n - 3n, 2n ** 63n - 2n, 2n ** 63n - 1n));
      await expect(service.list({ limit: 2 })).resolves.toEqual({
        items: plants(2n ** 63n - 3n, 2n ** 63n - 2n),
        next: 2n ** 63n - 2n,
      });
      expect(repository.list).toHaveBeenCalledWith({ limit: 3, after: undefined });
    });

    it('should answer an empty store with an empty page', async () => {
      repository.list.mockResolvedValue([]);
      await expect(service.list({ limit: 100 })).resolves.toEqual({ items: [] });
    });
  });

  describe('get', () => {
    it('should return the stored plant', async () => {
      repository.get.mockResolvedValue({ id: -(2n ** 63n), name: 'min' });
      await expect(service.get(-(2n ** 63n))).resolves.toEqual({ id: -(2n ** 63n), name: 'min' });
      expect(repository.get).toHaveBeenCalledWith(-(2n ** 63n));
    });

    it('should turn a missing plant into a 404 that names the exact id', async () => {
      repository.get.mockResolvedValue(undefined);
      await expect(service.get(9007199254740993n)).rejects.toThrow(
        new NotFoundException('No plant with id 9007199254740993'),
      );
    });
  });

  describe('delete', () => {
    it('should resolve when the repository deleted the plant', async () => {
      repository.delete.mockResolvedValue(true);
      await expect(service.delete(7n)).resolves.toBeUndefined();
      expect(repository.delete).toHaveBeenCalledWith(7n);
    });

    it('should turn a missing plant into a 404', async () => {
      repository.delete.mockResolvedValue(false);
      await expect(service.delete(7n)).rejects.toThrow(new NotFoundException('No plant with id 7'));
    });

    it('should let other storage failures through for the filter to answer 500', async () => {
      const failure = new StorageError('SQLite failed to delete a plant', { cause: null });
      repository.delete.mockRejectedValue(failure);
      await expect(service.delete(7n)).rejects.toBe(failure);
    });
  });
});
