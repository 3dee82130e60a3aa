import { ApiProperty, ApiPropertyOptions, ApiSchema } from '@nestjs/swagger';

// One check's result, by the check's name (`database`).
const CHECKS: ApiPropertyOptions = {
  type: 'object',
  additionalProperties: {
    type: 'object',
    required: ['status'],
    properties: { status: { type: 'string', enum: ['up', 'down'] } },
  },
};

/** The body of a passing health check (`@nestjs/terminus`). A failing one is a 503 with the Error body. */
@ApiSchema({ name: 'HealthCheck' })
export class HealthCheckDto {
  /**
   * `ok`: every check of this endpoint is up.
   * @example "ok"
   */
  @ApiProperty({ enum: ['ok'] })
  status!: 'ok';

  /**
   * The checks that are up, by name.
   * @example { "database": { "status": "up" } }
   */
  @ApiProperty(CHECKS)
  info!: Record<string, { status: 'up' | 'down' }>;

  /**
   * The checks that are down, by name: empty in a passing check.
   * @example {}
   */
  @ApiProperty(CHECKS)
  error!: Record<string, { status: 'up' | 'down' }>;

  /**
   * Every check, by name.
   * @example { "database": { "status": "up" } }
   */
  @ApiProperty(CHECKS)
  details!: Record<string, { status: 'up' | 'down' }>;
}
