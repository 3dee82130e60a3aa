import { RouteConfig } from '@nestjs/platform-fastify';

/**
 * What a client is told with a 503 when the store is away: after a timeout (the work may have been
 * done), and when it is unreachable (it was not). Each operation words what it means for its work.
 */
export interface StorageUnavailableMessages {
  readonly timeout: string;
  readonly unavailable: string;
}

/** Fastify route config set by `@WhenStorageUnavailable`, read by the exception filter. */
export interface StorageUnavailableRouteConfig {
  storageUnavailable?: StorageUnavailableMessages;
}

/** For a route without its own wording: true of any operation. */
export const DEFAULT_STORAGE_UNAVAILABLE: StorageUnavailableMessages = {
  timeout: 'The database did not answer in time; retry shortly',
  unavailable: 'The database is unavailable; retry shortly',
};

/** The 503 messages of one route, for `AllExceptionsFilter`, which maps storage failures to statuses. */
export const WhenStorageUnavailable = (messages: StorageUnavailableMessages): MethodDecorator =>
  RouteConfig({ storageUnavailable: messages } satisfies StorageUnavailableRouteConfig);
