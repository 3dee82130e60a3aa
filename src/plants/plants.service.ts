import { Injectable } from '@nestjs/common';
import { Counter, Registry } from 'prom-client';
import { Page, pageOf, PageQuery } from '../common/paging/page';
import { createsCounter } from '../common/resources/creates-counter';
import { resourceNotFound } from '../common/resources/resource-name';
import { PlantsRepository } from './persistence/plants.repository';
import { Plant } from './plant';

@Injectable()
export class PlantsService {
  private readonly creates: Counter<'outcome'>;

  constructor(
    private readonly plants: PlantsRepository,
    registry: Registry,
  ) {
    this.creates = createsCounter(registry, 'plants', 'plant');
  }

  /**
   * Stores a new plant; the same one again is a safe retry that answers it again (the request body holds only the DTO's fields). Other content
   * under a stored id is a 409: the repository throws `ResourceConflictError`, which the exception
   * filter answers.
   */
  async create(plant: Plant): Promise<Plant> {
    const { created } = await this.plants.create(plant);
    this.creates.inc({ outcome: created ? 'created' : 'replayed' });
    return plant;
  }

  /** Up to `limit` plants after `after`, by id; `next` is set when the store holds more (one more was read). */
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
