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
