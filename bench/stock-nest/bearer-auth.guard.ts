import { CanActivate, ExecutionContext, Injectable, UnauthorizedException } from '@nestjs/common';
import { FastifyRequest } from 'fastify';
import { createHash, timingSafeEqual } from 'node:crypto';

const digest = (token: string) => createHash('sha256').update(token).digest();

/** Every route needs `Authorization: Bearer <one of AUTH_TOKENS>` (Swagger's /docs is not a Nest route). */
@Injectable()
export class BearerAuthGuard implements CanActivate {
  private readonly tokens = (process.env.AUTH_TOKENS ?? '').split(',').filter(Boolean).map(digest);

  canActivate(context: ExecutionContext): boolean {
    const [scheme, token] = (context.switchToHttp().getRequest<FastifyRequest>().headers.authorization ?? '').split(
      ' ',
    );
    const presented = token === undefined ? undefined : digest(token);
    if (
      scheme?.toLowerCase() !== 'bearer' ||
      !this.tokens.some((known) => presented && timingSafeEqual(presented, known))
    )
      throw new UnauthorizedException('Bearer token is invalid or expired');
    return true;
  }
}
