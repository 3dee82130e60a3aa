/**
 * A create whose key is already stored with different content: nothing was changed. Thrown by a
 * repository (see `InsertOnce`), answered 409 with this message by `AllExceptionsFilter`, so a
 * service has nothing to translate. The message names the resource and its key, never its content.
 */
export class ResourceConflictError extends Error {
  override readonly name = 'ResourceConflictError';
}
