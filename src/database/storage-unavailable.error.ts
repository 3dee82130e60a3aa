/** The store cannot be reached right now (connection refused or lost); a later retry may succeed. */
export class StorageUnavailableError extends Error {
  override readonly name: string = 'StorageUnavailableError';

  constructor(message: string, options: { cause: unknown }) {
    super(message, options);
  }
}
