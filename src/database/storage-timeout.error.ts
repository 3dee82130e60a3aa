import { StorageUnavailableError } from './storage-unavailable.error';

/**
 * The store took the request but did not answer in time. Unlike a refused or lost connection, the
 * write may still have been committed, so the caller cannot be told it was not stored.
 */
export class StorageTimeoutError extends StorageUnavailableError {
  override readonly name = 'StorageTimeoutError';
}
