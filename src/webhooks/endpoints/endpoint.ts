/** A secret that signs an endpoint's deliveries; one rotated out signs until `expiresAtMs`. */
export interface SigningSecret {
  readonly secret: string;
  readonly expiresAtMs?: number;
}

/**
 * What an endpoint subscribes to unless it says otherwise: the new-plant event only, so endpoints made
 * before event types existed (and every `config` endpoint) never get a body they don't expect.
 */
export const DEFAULT_EVENT_TYPES: readonly string[] = ['plant.created'];

/** A subscriber of webhooks: of each event type it subscribes to. */
export interface Endpoint {
  /** `ep_` and a time-ordered suffix, so ids sort in creation order (the list's keyset). */
  readonly id: string;
  readonly url: string;
  readonly description: string;
  readonly disabled: boolean;
  /** The event types it gets deliveries of; the outbox writes none of any other type for it. */
  readonly eventTypes: readonly string[];
  /** Why the service disabled it; absent when enabled, or disabled through the API. */
  readonly disabledReason?: string;
  /** `config`: declared by WEBHOOK_URLS, read-only through the API. */
  readonly source: 'api' | 'config';
  readonly createdAtMs: number;
  readonly updatedAtMs: number;
}

export interface NewEndpoint {
  readonly id: string;
  readonly url: string;
  readonly description: string;
  readonly disabled: boolean;
  readonly secret: string;
  /** `DEFAULT_EVENT_TYPES` when absent. */
  readonly eventTypes?: readonly string[];
}

export interface EndpointChanges {
  readonly url?: string;
  readonly description?: string;
  readonly disabled?: boolean;
  readonly eventTypes?: readonly string[];
}

/** The secrets that sign now: every one not expired at `nowMs`, current first. */
export function signingSecrets(secrets: readonly SigningSecret[], nowMs: number): string[] {
  return secrets
    .filter((secret) => secret.expiresAtMs === undefined || secret.expiresAtMs > nowMs)
    .map((secret) => secret.secret);
}

/** `secrets` after a rotation to `next`: the current one signs `overlapMs` more, expired ones are dropped. */
export function rotated(
  secrets: readonly SigningSecret[],
  next: string,
  nowMs: number,
  overlapMs: number,
): SigningSecret[] {
  const kept = secrets
    .map((secret, i) => (i === 0 ? { secret: secret.secret, expiresAtMs: nowMs + overlapMs } : secret))
    .filter((secret) => secret.expiresAtMs === undefined || secret.expiresAtMs > nowMs);
  return [{ secret: next }, ...kept];
}
