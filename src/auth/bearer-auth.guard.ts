import { CanActivate, ExecutionContext, Injectable } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { FastifyRequest } from 'fastify';
import { AccessTokenVerifier } from './access-token.verifier';
import { IS_PUBLIC_KEY } from './public.decorator';
import { ADMIN_ONLY_KEY, InsufficientScopeException } from './admin-only.decorator';
import { withoutStack } from '../common/errors/without-stack';

/** Global guard: every route needs a valid bearer token unless its handler is `@Public()`, and the admin permission under `@AdminOnly()`. */
@Injectable()
export class BearerAuthGuard implements CanActivate {
  constructor(
    private readonly reflector: Reflector,
    private readonly verifier: AccessTokenVerifier,
  ) {}

  /** A boolean when the answer is known at once (Nest then awaits nothing), a promise for a JWT. */
  canActivate(context: ExecutionContext): boolean | Promise<boolean> {
    const isPublic = this.reflector.getAllAndOverride<boolean>(IS_PUBLIC_KEY, [
      context.getHandler(),
      context.getClass(),
    ]);
    if (isPublic) return true;
    const request = context.switchToHttp().getRequest<FastifyRequest>();
    const adminOnly = this.reflector.getAllAndOverride<boolean>(ADMIN_ONLY_KEY, [
      context.getHandler(),
      context.getClass(),
    ]);
    const pending = this.verifier.verifyRequest(request);
    if (!adminOnly) return pending === undefined ? true : pending.then(() => true);
    return pending === undefined ? this.admin(request) : pending.then(() => this.admin(request));
  }

  private admin(request: FastifyRequest): true {
    if (!this.verifier.isAdmin(request)) throw withoutStack(() => new InsufficientScopeException());
    return true;
  }
}
