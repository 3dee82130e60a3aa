import { ConflictException, Injectable } from '@nestjs/common';
import { withoutStack } from '../common/errors/without-stack';
import { Page, pageOf, PageQuery } from '../common/paging/page';
import { resourceNotFound } from '../common/resources/resource-name';
import { PlantConflictError } from './persistence/plant-conflict.error';
import { PlantsRepository } from './persistence/plants.repository';
import { Plant } from './plant';
import { PlantsMetrics } from './plants.metrics';

@Injectable()
export class PlantsService {
  constructor(
    private readonly plants: PlantsRepository,
    private readonly metrics: PlantsMetrics,
  ) {}

  /** Stores a new plant; sending an identical plant again is a safe retry that returns it again. */
  async create(plant: Plant): Promise<Plant> {
    try {
      const result = await this.plants.create(plant);
      this.metrics.created.inc({ outcome: result.created ? 'created' : 'replayed' });
      return result.plant;
    } catch (error) {
      if (error instanceof PlantConflictError) throw withoutStack(() => new ConflictException(error.message));
      // Storage failures go on as they are: the exception filter answers them (503 or 500).
      throw error;
    }
  }

  /** Up to `limit` plants after `after`, by id; `next` is set when the store holds more. */
  async list({ limit, after }: PageQuery): Promise<Page<Plant, bigint>> {
    return pageOf(await this.plants.list({ limit: limit + 1, after }), limit, (plant) => plant.id);
  }

  async get(id: bigint): Promise<Plant> {
    const plant = await this.plants.get(id);
    if (plant === undefined) throw resourceNotFound('plant', id);
    return plant;
  }

  async delete(id: bigint): Promise<void> {
    if (!(await this.plants.delete(id))) throw resourceNotFound('plant', id);
  }
}
