import { SkipThrottle } from '@nestjs/throttler';
import { Controller, Get, Header, Req } from '@nestjs/common';
import { FastifyRequest } from 'fastify';
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
  async scrape(@Req() request: FastifyRequest): Promise<string> {
    if (!this.config.metrics.public) await this.verifier.verifyRequest(request);
    return this.metrics.registry.metrics();
  }
}
