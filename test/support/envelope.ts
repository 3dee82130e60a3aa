/** A Standard Webhooks envelope as received: its type, its timestamp, and its data as raw text (ids exact). */
export interface Envelope {
  readonly type: string;
  readonly timestamp: string;
  readonly data: string;
}

/** `body` read as the envelope the service writes (`webhookBody`), or undefined if it is not one (a bare body). */
export function envelopeOf(body: string): Envelope | undefined {
  const match = /^\{"type":("(?:[^"\\]|\\.)*"),"timestamp":"([^"]*)","data":(\{.*\})\}$/s.exec(body);
  if (match === null) return undefined;
  return { type: JSON.parse(match[1]) as string, timestamp: match[2], data: match[3] };
}

/** RFC 3339 in UTC with milliseconds, as an envelope's `timestamp` is. */
export const UTC_MILLISECONDS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
