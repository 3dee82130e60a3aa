import { ConflictException } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { PlantConflictError } from './persistence/plant-conflict.error';
import { PlantsRepository } from './persistence/plants.repository';
import { StorageError } from './persistence/storage.error';
import { PlantsService } from './plants.service';

describe('PlantsService', () => {
  let service: PlantsService;
  let repository: jest.Mocked<PlantsRepository>;

  beforeEach(async () => {
    repository = { create: jest.fn() };
    const moduleRef = await Test.createTestingModule({
      providers: [PlantsService, { provide: PlantsRepository, useValue: repository }],
    }).compile();
    service = moduleRef.get(PlantsService);
  });

  describe('create', () => {
    it('should return the plant the repository stored', async () => {
      repository.create.mockResolvedValue({ id: 9007199254740993n, name: 'Monstera', tag: 'tropical' });
      await expect(service.create({ id: 9007199254740993n, name: 'Monstera', tag: 'tropical' })).resolves.toEqual({
        id: 9007199254740993n,
        name: 'Monstera',
        tag: 'tropical',
      });
      expect(repository.create).toHaveBeenCalledWith({ id: 9007199254740993n, name: 'Monstera', tag: 'tropical' });
    });

    it('should turn a conflicting id into a 409 that names the id', async () => {
      repository.create.mockRejectedValue(new PlantConflictError(7n));
      const result = service.create({ id: 7n, name: 'Other' });
      await expect(result).rejects.toThrow(ConflictException);
      await expect(result).rejects.toThrow('A plant with id 7 already exists with a different name or tag');
    });

    it('should let storage failures through for the filter to answer 500', async () => {
      const failure = new StorageError('SQLite failed to store a plant', { cause: new Error('disk I/O error') });
      repository.create.mockRejectedValue(failure);
      await expect(service.create({ id: 1n, name: 'x' })).rejects.toBe(failure);
    });
  });
});
