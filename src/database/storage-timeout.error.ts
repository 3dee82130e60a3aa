import { StorageUnavailableError } from './storage-unavailable.error';

/**
 * The store took the request but did not answer in time: unlike with a refused connection, a write
 * may have committed, so the caller cannot be told it was not stored.
 */
export class StorageTimeoutError extends StorageUnavailableError {
  override readonly name = 'StorageTimeoutError';
}
