import { StorageUnavailableError } from './storage-unavailable.error';
import { StorageError } from './storage.error';

// better-sqlite3's codes for "the file cannot be written right now", not "this statement is wrong":
// another connection holds the write lock (BUSY, LOCKED), the disk is full, the disk failed (IOERR_*),
// the file or its folder became read-only or went away.
const UNAVAILABLE_CODES = /^SQLITE_(BUSY|LOCKED|FULL|IOERR|READONLY|CANTOPEN)/;

/** True when another connection holds the lock a statement needs; `error` may be the port's, with the driver's as its cause. */
export function isBusy(error: unknown): boolean {
  const code = codeOf(error);
  if (code.startsWith('SQLITE_BUSY') || code.startsWith('SQLITE_LOCKED')) return true;
  return error instanceof Error && error.cause !== undefined && isBusy(error.cause);
}

/** A better-sqlite3 error as the port's: the file unavailable (a 503), or a plain failure with `message`. */
export function sqliteFailure(message: string, error: unknown): Error {
  const code = codeOf(error);
  if (UNAVAILABLE_CODES.test(code)) {
    return new StorageUnavailableError(`${message}: the SQLite file cannot be written right now (${code})`, {
      cause: error,
    });
  }
  return new StorageError(message, { cause: error });
}

function codeOf(error: unknown): string {
  const code = (error as { code?: unknown } | undefined)?.code;
  return typeof code === 'string' ? code : '';
}
