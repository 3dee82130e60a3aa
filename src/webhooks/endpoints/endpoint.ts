/** A secret that signs an endpoint's deliveries; one rotated out signs until `expiresAtMs`. */
export interface SigningSecret {
  readonly secret: string;
  readonly expiresAtMs?: number;
}

/** A subscriber of the new-plant webhook. */
export interface Endpoint {
  /** `ep_` and a time-ordered suffix, so ids sort in creation order (the list's keyset). */
  readonly id: string;
  readonly url: string;
  readonly description: string;
  readonly disabled: boolean;
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
}

export interface EndpointChanges {
  readonly url?: string;
  readonly description?: string;
  readonly disabled?: boolean;
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
