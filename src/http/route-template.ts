import { FastifyRequest } from 'fastify';

/** The route template a request matched (`/plants`), or `undefined` when it matched none (a 404). */
export function routeTemplateOf(request: FastifyRequest): string | undefined {
  return request.is404 ? undefined : request.routeOptions.url;
}
