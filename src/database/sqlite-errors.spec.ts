import { SqliteError } from 'better-sqlite3';
import { isBusy, sqliteFailure } from './sqlite-errors';
import { StorageUnavailableError } from './storage-unavailable.error';
import { StorageError } from './storage.error';

describe('sqliteFailure', () => {
  it.each([
    'SQLITE_BUSY',
    'SQLITE_BUSY_SNAPSHOT',
    'SQLITE_FULL',
    'SQLITE_IOERR_WRITE',
    'SQLITE_IOERR_FSYNC',
    'SQLITE_READONLY',
  ])('should make %s a StorageUnavailableError (a 503), naming the code', (code) => {
    const failure = sqliteFailure('SQLite failed to store a plant', new SqliteError('driver message', code));
    expect(failure).toBeInstanceOf(StorageUnavailableError);
    expect(failure.message).toBe(
      `SQLite failed to store a plant: the SQLite file cannot be written right now (${code})`,
    );
  });

  it.each(['SQLITE_CONSTRAINT_CHECK', 'SQLITE_TOOBIG', 'SQLITE_ERROR'])(
    'should keep %s a plain StorageError (a 500)',
    (code) => {
      const failure = sqliteFailure('SQLite failed to store a plant', new SqliteError('driver message', code));
      expect(failure).not.toBeInstanceOf(StorageUnavailableError);
      expect(failure).toEqual(new StorageError('SQLite failed to store a plant', { cause: undefined }));
    },
  );
});

describe('isBusy', () => {
  it('should see a busy driver error, also as the cause of the port error', () => {
    const busy = new SqliteError('database is locked', 'SQLITE_BUSY');
    expect(isBusy(busy)).toBe(true);
    expect(isBusy(sqliteFailure('x', busy))).toBe(true);
    expect(isBusy(sqliteFailure('x', new SqliteError('disk is full', 'SQLITE_FULL')))).toBe(false);
  });
});
