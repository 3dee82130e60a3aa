import { SkipThrottle } from '@nestjs/throttler';
import { Controller, Get, Header, Headers } from '@nestjs/common';
import { ApiExcludeController } from '@nestjs/swagger';
import { Registry } from 'prom-client';
import { AccessTokenVerifier } from '../auth/access-token.verifier';
import { Public } from '../auth/public.decorator';
import { AppConfig } from '../config/app-config';
import { MetricsService } from './metrics.service';

/** `GET /metrics` on the main port: behind the bearer token unless METRICS_PUBLIC=true. */
@ApiExcludeController()
// Never rate limited: a throttled probe gets the container restarted, or blinds monitoring, under load.
@SkipThrottle()
@Controller('metrics')
export class MetricsController {
  constructor(
    private readonly metrics: MetricsService,
    private readonly verifier: AccessTokenVerifier,
    private readonly config: AppConfig,
  ) {}

  @Get()
  @Public()
  @Header('Content-Type', Registry.PROMETHEUS_CONTENT_TYPE)
  async scrape(@Headers('authorization') authorization?: string): Promise<string> {
    if (!this.config.metrics.public) await this.verifier.verify(authorization);
    return this.metrics.registry.metrics();
  }
}
