import { applyDecorators, SetMetadata } from '@nestjs/common';
import { RouteConfig } from '@nestjs/platform-fastify';

export const IS_PUBLIC_KEY = 'isPublic';

/** Fastify route config flag set by `@Public()`, read before the body is parsed. */
export interface PublicRouteConfig {
  isPublic?: boolean;
}

/**
 * Marks one route handler as reachable without a bearer token. Every other route is protected.
 * It is a method decorator on purpose: public routes are opted in one at a time.
 */
export const Public = (): MethodDecorator =>
  applyDecorators(SetMetadata(IS_PUBLIC_KEY, true), RouteConfig({ isPublic: true } satisfies PublicRouteConfig));
