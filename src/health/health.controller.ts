import { SkipThrottle } from '@nestjs/throttler';
import { Controller, Get, ServiceUnavailableException } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { HealthCheck, HealthCheckResult, HealthCheckService } from '@nestjs/terminus';
import { Public } from '../auth/public.decorator';
import { ShutdownSignal } from '../lifecycle/shutdown-signal';
import { ApiErrorResponses, CONNECTION_ERRORS } from '../common/errors/api-error-responses.decorator';
import { DatabaseHealthIndicator } from './database.health-indicator';
import { HealthCheckDto } from './dto/health-check.dto';

@ApiTags('health')
// Never rate limited: a throttled probe gets the container restarted, or blinds monitoring, under load.
@SkipThrottle()
// What Node answers before any route, as for every operation (the 500 is declared for all in the document setup).
@ApiErrorResponses(CONNECTION_ERRORS)
@Controller('health')
export class HealthController {
  constructor(
    private readonly health: HealthCheckService,
    private readonly database: DatabaseHealthIndicator,
    private readonly shutdown: ShutdownSignal,
  ) {}

  /** Liveness: 200 while the process runs and serves HTTP. For restarts, not for traffic. */
  @Get('live')
  @Public()
  @HealthCheck({ swaggerDocumentation: false })
  @ApiOperation({ operationId: 'liveness', summary: 'Liveness', security: [] })
  @ApiOkResponse({
    type: HealthCheckDto,
    description: 'The process is running (no checks: info and details are empty).',
  })
  live(): Promise<HealthCheckResult> {
    return this.health.check([]);
  }

  /**
   * Readiness: 200 only when the database answers (and, for SQLite, the file can be written) and
   * migrations are done; 503 otherwise, and from the moment SIGTERM arrives.
   */
  @Get('ready')
  @Public()
  @HealthCheck({ swaggerDocumentation: false })
  @ApiOperation({ operationId: 'readiness', summary: 'Readiness', security: [] })
  @ApiOkResponse({ type: HealthCheckDto, description: 'Ready for traffic: the database answers and is migrated.' })
  @ApiErrorResponses({
    503: [
      'Not ready: the database is unreachable or not migrated, or the service is shutting down.',
      'Not ready: database is down',
    ],
  })
  async ready(): Promise<HealthCheckResult> {
    if (this.shutdown.raised) throw new ServiceUnavailableException('Not ready: shutting down');
    try {
      return await this.health.check([() => this.database.check('database')]);
    } catch (error) {
      const result = (error as ServiceUnavailableException).getResponse() as HealthCheckResult;
      const down = Object.keys(result.error ?? {});
      throw new ServiceUnavailableException(`Not ready: ${down.join(', ') || 'a check'} is down`);
    }
  }
}
