/** The store failed in a way the caller cannot fix; the driver's error is kept as `cause` for the log. */
export class StorageError extends Error {
  override readonly name = 'StorageError';

  constructor(message: string, options: { cause: unknown }) {
    super(message, options);
  }
}
