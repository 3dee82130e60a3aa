import { OpenAPIObject } from '@nestjs/swagger';

/**
 * The document's operation for a Fastify route's `url` (`/plants/:id` is `/plants/{id}`) and `method`,
 * for the hooks that act on what the document declares (its serializer, its security).
 */
export function documentedOperation(document: OpenAPIObject, url: string, method: string): unknown {
  const path = url.replace(/:(\w+)/g, '{$1}');
  return (document.paths[path] as Record<string, unknown> | undefined)?.[method.toLowerCase()];
}
