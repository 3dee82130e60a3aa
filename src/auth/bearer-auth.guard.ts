import { CanActivate, ExecutionContext, Injectable } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { FastifyRequest } from 'fastify';
import { AccessTokenVerifier } from './access-token.verifier';
import { IS_PUBLIC_KEY } from './public.decorator';
import { ADMIN_ONLY_KEY, InsufficientScopeException } from './admin-only.decorator';
import { withoutStack } from '../common/errors/without-stack';
import { callerTrusted } from '../tracing/trace-context';

/** Global guard: every route needs a valid bearer token unless its handler is `@Public()`, and the admin permission under `@AdminOnly()`. */
@Injectable()
export class BearerAuthGuard implements CanActivate {
  /**
   * What each handler asks for, read off its decorators once: decorator metadata is fixed when the
   * class is defined, and four metadata lookups per request would be a share of a read's CPU. By
   * controller, then handler: a handler inherited by two controllers may be admin-only in one.
   */
  private readonly access = new WeakMap<object, WeakMap<object, HandlerAccess>>();

  constructor(
    private readonly reflector: Reflector,
    private readonly verifier: AccessTokenVerifier,
  ) {}

  /** A boolean when the answer is known at once (Nest then awaits nothing), a promise for a JWT. */
  canActivate(context: ExecutionContext): boolean | Promise<boolean> {
    const { isPublic, adminOnly } = this.accessOf(context.getHandler(), context.getClass());
    if (isPublic) return true;
    // The request is the first argument of an HTTP handler's context: `switchToHttp()` would add three
    // new closures to the context (Object.assign) on every request, for the same read.
    const request = context.getArgByIndex<FastifyRequest>(0);
    const pending = this.verifier.verifyRequest(request);
    if (!adminOnly) return pending === undefined ? trusted(request) : pending.then(() => trusted(request));
    return pending === undefined ? this.admin(request) : pending.then(() => this.admin(request));
  }

  private accessOf(handler: Handler, controller: Controller): HandlerAccess {
    let byHandler = this.access.get(controller);
    if (byHandler === undefined) this.access.set(controller, (byHandler = new WeakMap()));
    let access = byHandler.get(handler);
    if (access === undefined) {
      const targets = [handler, controller];
      access = {
        isPublic: this.reflector.getAllAndOverride<boolean | undefined>(IS_PUBLIC_KEY, targets) === true,
        adminOnly: this.reflector.getAllAndOverride<boolean | undefined>(ADMIN_ONLY_KEY, targets) === true,
      };
      byHandler.set(handler, access);
    }
    return access;
  }

  private admin(request: FastifyRequest): true {
    if (!this.verifier.isAdmin(request)) throw withoutStack(() => new InsufficientScopeException());
    return trusted(request);
  }
}

/**
 * The credential passed (and the admin permission where asked): with tracing on, the request may now
 * continue the trace its caller sent. Until here, a 401, 403 or 429 never does.
 */
function trusted(request: FastifyRequest): true {
  callerTrusted(request);
  return true;
}

type Handler = ReturnType<ExecutionContext['getHandler']>;
type Controller = ReturnType<ExecutionContext['getClass']>;

/** Whether a handler is `@Public()`, and whether it (or its controller) is `@AdminOnly()`. */
interface HandlerAccess {
  readonly isPublic: boolean;
  readonly adminOnly: boolean;
}
