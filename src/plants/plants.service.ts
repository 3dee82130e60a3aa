import { ConflictException, Injectable, NotFoundException, ServiceUnavailableException } from '@nestjs/common';
import { withoutStack } from '../errors/without-stack';
import { MetricsService } from '../metrics/metrics.service';
import { PlantConflictError } from './persistence/plant-conflict.error';
import { PageQuery, PlantsRepository } from './persistence/plants.repository';
import { StorageTimeoutError } from '../database/storage-timeout.error';
import { StorageUnavailableError } from '../database/storage-unavailable.error';
import { Plant } from './plant';

/** One page of plants, and the id to continue after when more may follow. */
export interface PlantsPage {
  readonly plants: Plant[];
  readonly next?: bigint;
}

/** What a client is told when the store fails: after a timeout, and when it is unreachable. */
interface UnavailableMessages {
  readonly timeout: string;
  readonly unavailable: string;
}

const CREATE_UNAVAILABLE: UnavailableMessages = {
  timeout:
    'The database did not answer in time; the plant may or may not be stored: send the same request again (a replay is safe)',
  unavailable: 'The database is unavailable; the plant was not stored, retry shortly',
};
const READ_UNAVAILABLE: UnavailableMessages = {
  timeout: 'The database did not answer in time; retry shortly',
  unavailable: 'The database is unavailable; retry shortly',
};
const DELETE_UNAVAILABLE: UnavailableMessages = {
  timeout:
    'The database did not answer in time; the plant may or may not be deleted: send the same request again (404 then means it was)',
  unavailable: 'The database is unavailable; the plant was not deleted, retry shortly',
};

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
      throw this.storageFailure(error, CREATE_UNAVAILABLE);
    }
  }

  /** Up to `limit` plants after `after`, by id; `next` is set when the store holds more. */
  async list({ limit, after }: PageQuery): Promise<PlantsPage> {
    // One more than asked tells whether another page exists, without a count.
    const plants = await this.guarded(this.plants.list({ limit: limit + 1, after }), READ_UNAVAILABLE);
    if (plants.length <= limit) return { plants };
    plants.length = limit;
    return { plants, next: plants[limit - 1].id };
  }

  async get(id: bigint): Promise<Plant> {
    const plant = await this.guarded(this.plants.get(id), READ_UNAVAILABLE);
    if (plant === undefined) throw notFound(id);
    return plant;
  }

  async delete(id: bigint): Promise<void> {
    if (!(await this.guarded(this.plants.delete(id), DELETE_UNAVAILABLE))) throw notFound(id);
  }

  private async guarded<T>(work: Promise<T>, messages: UnavailableMessages): Promise<T> {
    try {
      return await work;
    } catch (error) {
      throw this.storageFailure(error, messages);
    }
  }

  /** A 503 for a store that is unreachable or slow, counted; anything else goes on to the filter's 500. */
  private storageFailure(error: unknown, messages: UnavailableMessages): unknown {
    if (error instanceof StorageTimeoutError) {
      this.metrics.databaseErrors.inc({ kind: 'timeout' });
      return new ServiceUnavailableException(messages.timeout);
    }
    if (error instanceof StorageUnavailableError) {
      this.metrics.databaseErrors.inc({ kind: 'unavailable' });
      return new ServiceUnavailableException(messages.unavailable);
    }
    this.metrics.databaseErrors.inc({ kind: 'failure' });
    return error;
  }
}

function notFound(id: bigint): NotFoundException {
  return withoutStack(() => new NotFoundException(`No plant with id ${id}`));
}
