// Codes that mean "the server is not reachable right now", not "this query is wrong": SQLSTATE class 08
// (connection exception), 57P01-57P03 (shutting down or starting up), 53300 (too many connections).
const UNAVAILABLE_SQLSTATE = /^(08|57P0[123]$|53300$)/;
const UNAVAILABLE_SOCKET_ERROR = /^(ECONNREFUSED|ECONNRESET|ETIMEDOUT|EHOSTUNREACH|ENOTFOUND|EPIPE|EAI_AGAIN)$/;
// What pg itself throws when a connection ends or cannot be made in time.
const UNAVAILABLE_MESSAGES =
  /Connection terminated|timeout exceeded when trying to connect|connection error|not queryable/i;

// What pg throws when a query's `query_timeout` passes before the server answers.
const QUERY_TIMEOUT_MESSAGE = 'Query read timeout';
// The server's own limits (set on every connection): 57014 query_canceled (statement_timeout),
// 55P03 lock_not_available (lock_timeout), 25P03 idle_in_transaction_session_timeout.
const SERVER_TIMEOUT_SQLSTATE = new Set(['57014', '55P03', '25P03']);

/**
 * True when a statement ran out of time: the server cancelled it (statement or lock timeout), or it
 * took the statement but did not answer within pg's `query_timeout`.
 */
export function isQueryTimeout(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  const { code } = error as { code?: unknown };
  return error.message === QUERY_TIMEOUT_MESSAGE || (typeof code === 'string' && SERVER_TIMEOUT_SQLSTATE.has(code));
}

/** True when a pg error says the database is out of reach, so a retry later may succeed. */
export function isUnavailable(error: unknown): boolean {
  const { code, message } = (error ?? {}) as { code?: unknown; message?: unknown };
  if (typeof code === 'string' && (UNAVAILABLE_SQLSTATE.test(code) || UNAVAILABLE_SOCKET_ERROR.test(code))) return true;
  if (error instanceof AggregateError) return error.errors.some(isUnavailable);
  return typeof message === 'string' && UNAVAILABLE_MESSAGES.test(message);
}
