import { ConflictException, Injectable } from '@nestjs/common';
import { PlantConflictError } from './persistence/plant-conflict.error';
import { PlantsRepository } from './persistence/plants.repository';
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
      throw error;
    }
  }
}
