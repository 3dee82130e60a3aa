import { Injectable } from '@nestjs/common';
import { HealthIndicatorService } from '@nestjs/terminus';
import { Database } from '../database/database';

/** Up when the database answers and every migration is applied. */
@Injectable()
export class DatabaseHealthIndicator {
  constructor(
    private readonly database: Database,
    private readonly health: HealthIndicatorService,
  ) {}

  async check(key: string) {
    const indicator = this.health.check(key);
    try {
      await this.database.ping();
      return indicator.up();
    } catch {
      return indicator.down({ message: 'unreachable or not migrated' });
    }
  }
}
