/** The longest a receiver's `Retry-After` holds a delivery or an endpoint back. */
export const MAX_RETRY_AFTER_MS = 3_600_000;

/** The answers whose `Retry-After` counts (Standard Webhooks, RFC 9110 §10.2.3): too many requests, unavailable. */
const HONOURED = new Set([429, 503]);

/**
 * How long the receiver asked us to wait, in milliseconds, from the `Retry-After` of a 429 or 503
 * answer: delta-seconds or an HTTP date, clamped to [0, MAX_RETRY_AFTER_MS]. Undefined for any other
 * status, no header, or one that is neither form (it is then as if absent: the schedule decides).
 */
export function retryAfterMs(
  status: number,
  header: string | readonly string[] | undefined,
  nowMs: number = Date.now(),
): number | undefined {
  if (!HONOURED.has(status) || header === undefined) return undefined;
  // Repeated, the header is malformed; its first value is the likeliest meant.
  const value = (typeof header === 'string' ? header : (header[0] ?? '')).trim();
  let waitMs: number;
  if (/^\d+$/.test(value)) {
    waitMs = Number(value) * 1000; // a huge value is Infinity or past the clamp either way
  } else if (/^[A-Za-z]{3,9}, /.test(value) || /^[A-Za-z]{3} [A-Za-z]{3} /.test(value)) {
    // IMF-fixdate, or the obsolete RFC 850 and asctime forms, which recipients must accept too
    // (asctime has no zone and means GMT; Date.parse would read it as local time).
    const at = Date.parse(/^[A-Za-z]{3} [A-Za-z]{3} /.test(value) ? `${value} GMT` : value);
    if (Number.isNaN(at)) return undefined;
    waitMs = at - nowMs;
  } else {
    return undefined;
  }
  return Math.min(Math.max(waitMs, 0), MAX_RETRY_AFTER_MS);
}
