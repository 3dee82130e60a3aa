import { ConflictException, Injectable, ServiceUnavailableException } from '@nestjs/common';
import { PlantConflictError } from './persistence/plant-conflict.error';
import { PlantsRepository } from './persistence/plants.repository';
import { StorageUnavailableError } from './persistence/storage-unavailable.error';
import { Plant } from './plant';

@Injectable()
export class PlantsService {
  constructor(private readonly plants: PlantsRepository) {}

  /** Stores a new plant; sending an identical plant again is a safe retry that returns it again. */
  async create(plant: Plant): Promise<Plant> {
    try {
      return await this.plants.create(plant);
    } catch (error) {
      if (error instanceof PlantConflictError) throw new ConflictException(error.message);
      if (error instanceof StorageUnavailableError) {
        throw new ServiceUnavailableException('The database is unavailable; the plant was not stored, retry shortly');
      }
      throw error;
    }
  }
}
