import { ConflictException, Injectable, ServiceUnavailableException } from '@nestjs/common';
import { withoutStack } from '../errors/without-stack';
import { MetricsService } from '../metrics/metrics.service';
import { PlantConflictError } from './persistence/plant-conflict.error';
import { PlantsRepository } from './persistence/plants.repository';
import { StorageTimeoutError } from './persistence/storage-timeout.error';
import { StorageUnavailableError } from './persistence/storage-unavailable.error';
import { Plant } from './plant';

@Injectable()
export class PlantsService {
  constructor(
    private readonly plants: PlantsRepository,
    private readonly metrics: MetricsService,
  ) {}

  /** Stores a new plant; sending an identical plant again is a safe retry that returns it again. */
  async create(plant: Plant): Promise<Plant> {
    try {
      const result = await this.plants.create(plant);
      this.metrics.plantsCreated.inc({ outcome: result.created ? 'created' : 'replayed' });
      return result.plant;
    } catch (error) {
      if (error instanceof PlantConflictError) throw withoutStack(() => new ConflictException(error.message));
      if (error instanceof StorageTimeoutError) {
        this.metrics.databaseErrors.inc({ kind: 'timeout' });
        throw new ServiceUnavailableException(
          'The database did not answer in time; the plant may or may not be stored: send the same request again (a replay is safe)',
        );
      }
      if (error instanceof StorageUnavailableError) {
        this.metrics.databaseErrors.inc({ kind: 'unavailable' });
        throw new ServiceUnavailableException('The database is unavailable; the plant was not stored, retry shortly');
      }
      this.metrics.databaseErrors.inc({ kind: 'failure' });
      throw error;
    }
  }
}
