/**
 * Builds an error without capturing a stack trace. For the expected client errors (4xx) thrown on
 * the request path: nobody reads their stack (the filter logs stacks of 500s only), and capturing
 * one costs more than the rest of a 401.
 */
export function withoutStack<T extends Error>(create: () => T): T {
  const limit = Error.stackTraceLimit;
  Error.stackTraceLimit = 0;
  try {
    return create();
  } finally {
    Error.stackTraceLimit = limit;
  }
}
