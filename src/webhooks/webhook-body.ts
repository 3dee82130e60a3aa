/** A stored message, as far as its body goes (`webhook_messages`). */
export interface StoredMessage {
  readonly eventType: string;
  /** The event's data, JSON text, ids exact. */
  readonly data: string;
  /** Sent in the Standard Webhooks envelope, or bare (the data is the whole body). */
  readonly enveloped: boolean;
  /** When it was written, on the store's clock, in whole Unix ms. */
  readonly createdAtMs: number;
}

/**
 * The body of a message exactly as sent and signed, the same on every attempt, and as the delivery log
 * shows it: the data alone for a bare message (`plant.created`, the sample's NewPlant), or the Standard
 * Webhooks envelope `{"type","timestamp","data"}`, whose `type` is inside the signature, so nobody can
 * swap it in transit. `timestamp`: the message's `createdAt`, RFC 3339 in UTC with milliseconds.
 */
export function webhookBody({ eventType, data, enveloped, createdAtMs }: StoredMessage): string {
  if (!enveloped) return data;
  return `{"type":${JSON.stringify(eventType)},"timestamp":"${new Date(createdAtMs).toISOString()}","data":${data}}`;
}
