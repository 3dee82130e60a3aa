import { ConflictException, ServiceUnavailableException } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { MetricsService } from '../metrics/metrics.service';
import { PlantConflictError } from './persistence/plant-conflict.error';
import { PlantsRepository } from './persistence/plants.repository';
import { StorageTimeoutError } from './persistence/storage-timeout.error';
import { StorageUnavailableError } from './persistence/storage-unavailable.error';
import { StorageError } from './persistence/storage.error';
import { PlantsService } from './plants.service';

describe('PlantsService', () => {
  let service: PlantsService;
  let repository: jest.Mocked<PlantsRepository>;
  let metrics: MetricsService;

  const counted = async (name: string, labels: Record<string, string>) => {
    const metric = await metrics.registry.getSingleMetric(name)!.get();
    return metric.values.find((value) => Object.entries(labels).every(([k, v]) => value.labels[k] === v))?.value ?? 0;
  };

  beforeEach(async () => {
    repository = { create: jest.fn(), ping: jest.fn() };
    const moduleRef = await Test.createTestingModule({
      providers: [PlantsService, MetricsService, { provide: PlantsRepository, useValue: repository }],
    }).compile();
    service = moduleRef.get(PlantsService);
    metrics = moduleRef.get(MetricsService);
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

    it('should turn an unreachable store into a 503 and count it', async () => {
      repository.create.mockRejectedValue(new StorageUnavailableError('PostgreSQL is unavailable', { cause: null }));
      await expect(service.create({ id: 1n, name: 'x' })).rejects.toThrow(ServiceUnavailableException);
      expect(await counted('plant_store_database_errors_total', { kind: 'unavailable' })).toBe(1);
    });

    it('should turn a store that did not answer in time into a 503 that does not say "not stored", and count it', async () => {
      repository.create.mockRejectedValue(
        new StorageTimeoutError('PostgreSQL did not answer within 5 ms', { cause: null }),
      );
      const result = service.create({ id: 1n, name: 'x' });
      await expect(result).rejects.toThrow(ServiceUnavailableException);
      await expect(result).rejects.toThrow(/may or may not be stored/);
      expect(await counted('plant_store_database_errors_total', { kind: 'timeout' })).toBe(1);
      expect(await counted('plant_store_database_errors_total', { kind: 'unavailable' })).toBe(0);
    });

    it('should let other storage failures through for the filter to answer 500, and count them', async () => {
      const failure = new StorageError('SQLite failed to store a plant', { cause: new Error('disk I/O error') });
      repository.create.mockRejectedValue(failure);
      await expect(service.create({ id: 1n, name: 'x' })).rejects.toBe(failure);
      expect(await counted('plant_store_database_errors_total', { kind: 'failure' })).toBe(1);
    });
  });
});
