/** Errors a driver threw inside a `Database.transaction`, as opposed to those its work threw itself. */
const thrown = new WeakSet<object>();

/** Remembers `error` as the driver's (to be translated to the port's errors), and returns it. */
export function driverError(error: unknown): unknown {
  if (typeof error === 'object' && error !== null) thrown.add(error);
  return error;
}

/** Whether `error` was thrown by the driver (a statement, BEGIN or COMMIT) rather than by the work. */
export function isDriverError(error: unknown): boolean {
  return typeof error === 'object' && error !== null && thrown.has(error);
}

// SQLite's and PostgreSQL's codes for a UNIQUE violation (PostgreSQL's covers a primary key's too).
const UNIQUE_VIOLATION = new Set(['SQLITE_CONSTRAINT_UNIQUE', '23505']);

/** Whether a statement's error (as `tx.execute` threw it) is a unique violation: for work's own conflict error. */
export function isUniqueViolation(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' && UNIQUE_VIOLATION.has(code);
}
