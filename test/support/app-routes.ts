import { INestApplication, RequestMethod } from '@nestjs/common';
import { METHOD_METADATA, PATH_METADATA } from '@nestjs/common/constants';
import { ModulesContainer } from '@nestjs/core';
import { ADMIN_ONLY_KEY } from '../../src/auth/admin-only.decorator';
import { IS_PUBLIC_KEY } from '../../src/auth/public.decorator';

/** One route the app serves, as its controllers declare it, with what the decorators say about it. */
export interface AppRoute {
  /** `get /plants/{id}`: the document's method and path template. */
  readonly at: string;
  readonly method: string;
  readonly path: string;
  readonly public: boolean;
  readonly adminOnly: boolean;
  /** `@SkipThrottle()`: the rate limit never applies. */
  readonly unthrottled: boolean;
  /** `@ApiExcludeController()` / `@ApiExcludeEndpoint()`: served, but not part of the interface. */
  readonly undocumented: boolean;
}

const SKIP_THROTTLE = 'THROTTLER:SKIPdefault';
// @nestjs/swagger's keys (its constants are not exported by its package).
const EXCLUDE_CONTROLLER = 'swagger/apiExcludeController';
const EXCLUDE_ENDPOINT = 'swagger/apiExcludeEndpoint';

/** Every route of every controller in the app, read from the decorators' metadata (never from a list). */
export function appRoutes(app: INestApplication): AppRoute[] {
  const routes: AppRoute[] = [];
  for (const module of app.get(ModulesContainer).values()) {
    for (const { metatype } of module.controllers.values()) {
      if (typeof metatype !== 'function') continue;
      const controller = metatype as unknown as { prototype: object };
      const prefixes = ([] as string[]).concat(Reflect.getMetadata(PATH_METADATA, controller) ?? '/');
      for (const name of Object.getOwnPropertyNames(controller.prototype)) {
        const handler = (controller.prototype as Record<string, unknown>)[name];
        if (name === 'constructor' || typeof handler !== 'function') continue;
        const method = Reflect.getMetadata(METHOD_METADATA, handler) as RequestMethod | undefined;
        if (method === undefined) continue;
        const flag = (key: string) =>
          Reflect.getMetadata(key, handler) === true || Reflect.getMetadata(key, controller) === true;
        const paths = ([] as string[]).concat(Reflect.getMetadata(PATH_METADATA, handler) ?? '/');
        for (const prefix of prefixes) {
          for (const path of paths) {
            const template = `/${[prefix, path].join('/')}`.replace(/\/+/g, '/').replace(/(.)\/$/, '$1');
            const documentPath = template.replace(/:(\w+)/g, '{$1}');
            const verb = RequestMethod[method].toLowerCase();
            routes.push({
              at: `${verb} ${documentPath}`,
              method: verb,
              path: documentPath,
              public: flag(IS_PUBLIC_KEY),
              adminOnly: flag(ADMIN_ONLY_KEY),
              unthrottled: flag(SKIP_THROTTLE),
              undocumented:
                (Reflect.getMetadata(EXCLUDE_CONTROLLER, controller) as boolean[] | undefined)?.[0] === true ||
                (Reflect.getMetadata(EXCLUDE_ENDPOINT, handler) as { disable?: boolean } | undefined)?.disable === true,
            });
          }
        }
      }
    }
  }
  return routes;
}
