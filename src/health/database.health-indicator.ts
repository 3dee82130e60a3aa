import { Injectable } from '@nestjs/common';
import { HealthIndicatorService } from '@nestjs/terminus';
import { PlantsRepository } from '../plants/persistence/plants.repository';

/** Up when the plant store answers and its schema is migrated. */
@Injectable()
export class DatabaseHealthIndicator {
  constructor(
    private readonly plants: PlantsRepository,
    private readonly health: HealthIndicatorService,
  ) {}

  async check(key: string) {
    const indicator = this.health.check(key);
    try {
      await this.plants.ping();
      return indicator.up();
    } catch {
      return indicator.down({ message: 'unreachable or not migrated' });
    }
  }
}
