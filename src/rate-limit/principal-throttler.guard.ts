import { Injectable } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import {
  InjectThrottlerOptions,
  InjectThrottlerStorage,
  ThrottlerGuard,
  ThrottlerLimitDetail,
  ThrottlerModuleOptions,
  ThrottlerStorage,
} from '@nestjs/throttler';
import { ExecutionContext } from '@nestjs/common';
import { AccessTokenVerifier } from '../auth/access-token.verifier';

/**
 * The rate limit per verified principal: one budget per static token or per JWT issuer and subject,
 * across every operation, however the `Authorization` header is spelled. It runs after
 * `BearerAuthGuard`, which records the principal; a request without one (a public route) counts
 * under its client address, which `TRUST_PROXY` decides.
 */
@Injectable()
export class PrincipalThrottlerGuard extends ThrottlerGuard {
  constructor(
    @InjectThrottlerOptions() options: ThrottlerModuleOptions,
    @InjectThrottlerStorage() storage: ThrottlerStorage,
    reflector: Reflector,
    private readonly verifier: AccessTokenVerifier,
  ) {
    super(options, storage, reflector);
  }

  protected override async getTracker(request: Record<string, unknown>): Promise<string> {
    return this.verifier.principalOf(request) ?? `ip:${await super.getTracker(request)}`;
  }

  /** One key per principal, not per handler as the base class has it: the budget covers every operation. */
  protected override generateKey(_context: ExecutionContext, tracker: string, throttlerName: string): string {
    return `plant-store:rate-limit:${throttlerName}:${tracker}`;
  }

  /**
   * The 429 carries the budget too, as every answer the limit counted does (the document declares
   * them on every such answer): the limit, none left, and the seconds until it refills.
   */
  protected override async throwThrottlingException(
    context: ExecutionContext,
    detail: ThrottlerLimitDetail,
  ): Promise<void> {
    const { res } = this.getRequestResponse(context);
    this.setResponseHeader(res, 'X-RateLimit-Limit', detail.limit);
    this.setResponseHeader(res, 'X-RateLimit-Remaining', 0);
    this.setResponseHeader(res, 'X-RateLimit-Reset', detail.timeToBlockExpire);
    return super.throwThrottlingException(context, detail);
  }
}
