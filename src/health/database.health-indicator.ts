import { Injectable } from '@nestjs/common';
import { HealthIndicatorService } from '@nestjs/terminus';
import { Database } from '../database/database';
import { SharedResult } from '../http/shared-result';

/** How long one answer of the database serves every readiness probe. */
const PING_SHARED_MS = 1000;

/**
 * Up when the database answers and every migration is applied. Readiness is public: however many
 * probes come, the database is asked at most once per PING_SHARED_MS per instance.
 */
@Injectable()
export class DatabaseHealthIndicator {
  private readonly ping: SharedResult<void>;

  constructor(
    database: Database,
    private readonly health: HealthIndicatorService,
  ) {
    this.ping = new SharedResult(() => database.ping(), PING_SHARED_MS);
  }

  async check(key: string) {
    const indicator = this.health.check(key);
    try {
      await this.ping.get();
      return indicator.up();
    } catch {
      return indicator.down({ message: 'unreachable or not migrated' });
    }
  }
}
