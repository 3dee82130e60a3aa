import { SkipThrottle } from '@nestjs/throttler';
import { Controller, Get, Header, Req } from '@nestjs/common';
import { FastifyRequest } from 'fastify';
import { ApiExcludeController } from '@nestjs/swagger';
import { Registry } from 'prom-client';
import { AccessTokenVerifier } from '../auth/access-token.verifier';
import { ADMIN_PERMISSION, InsufficientScopeException } from '../auth/admin-only.decorator';
import { Public } from '../auth/public.decorator';
import { StaticTokens } from '../auth/static-tokens';
import { withoutStack } from '../common/errors/without-stack';
import { AppConfig } from '../config/app-config';
import { MetricsService } from './metrics.service';

/**
 * `GET /metrics` on the main port, unless METRICS_PUBLIC=true for a token of METRICS_TOKENS (a
 * scrape job's bearer token) or the admin permission: it shows the operator's state (the webhook
 * backlog, throttled endpoints, attempt outcomes), not an API client's business.
 */
@ApiExcludeController()
// Never rate limited: a throttled probe gets the container restarted, or blinds monitoring, under load.
@SkipThrottle()
// `@Public()` to the guard: this handler checks its own credentials, a metrics token first.
@Controller('metrics')
export class MetricsController {
  private readonly scrapers: StaticTokens;

  constructor(
    private readonly metrics: MetricsService,
    private readonly verifier: AccessTokenVerifier,
    private readonly config: AppConfig,
  ) {
    this.scrapers = new StaticTokens(config.metrics.tokens);
  }

  @Get()
  @Public()
  @Header('Content-Type', Registry.PROMETHEUS_CONTENT_TYPE)
  async scrape(@Req() request: FastifyRequest): Promise<string> {
    if (!this.config.metrics.public) await this.authorize(request);
    return this.metrics.registry.metrics();
  }

  /**
   * A metrics token passes before anything is counted, so a scrape never counts as a failed
   * authentication. Any other header is checked as on every route (401 and its count, 429, 503),
   * and a valid credential without the admin permission is 403. A metrics token is nothing
   * elsewhere: the API does not know it (401).
   */
  private async authorize(request: FastifyRequest): Promise<void> {
    if (this.scrapers.accepts(request.headers.authorization)) return;
    await this.verifier.verifyRequest(request);
    if (!this.verifier.isAdmin(request)) {
      throw withoutStack(() => new InsufficientScopeException(`a token of METRICS_TOKENS, or ${ADMIN_PERMISSION}`));
    }
  }
}
