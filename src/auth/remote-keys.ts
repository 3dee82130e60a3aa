import { createLocalJWKSet, errors, JSONWebKeySet, JWTVerifyGetKey } from 'jose';
import { IdentityProviderUnavailableError } from './identity-provider-unavailable.error';

const FETCH_TIMEOUT_MS = 5000;
/** Keys older than this are fetched again, in the background: the known ones keep working meanwhile. */
const REFRESH_AFTER_MS = 10 * 60_000;
/** A token with an unknown `kid` fetches the keys again at most this often (they may have rotated). */
const UNKNOWN_KEY_COOLDOWN_MS = 30_000;
/** After a failed fetch, the next is tried at most this often, so an outage is not hammered. */
const RETRY_AFTER_FAILURE_MS = 1000;

/**
 * The signing keys of AUTH_JWKS_URL, for jose's `jwtVerify`. Unlike jose's own remote key set, keys
 * already fetched keep working while the identity provider is unreachable, however long the outage
 * (jose drops them once they are ten minutes old and the refetch fails); and a token whose key is
 * unknown while the provider is unreachable is told apart from a token with a bad key: it is
 * `IdentityProviderUnavailableError` (503), not a refusal (401).
 */
export class RemoteKeys {
  private keys?: JWTVerifyGetKey;
  private fetchedAt = -Infinity;
  private attemptedAt = -Infinity;
  private failed = false;
  private pending?: Promise<void>;

  constructor(
    private readonly url: URL,
    private readonly now: () => number = Date.now,
  ) {}

  readonly getKey: JWTVerifyGetKey = async (header, token) => {
    if (this.keys === undefined) await this.refreshOrFail();
    else if (this.now() - this.fetchedAt >= REFRESH_AFTER_MS && this.mayAttempt(0)) {
      this.refresh().catch(() => undefined); // in the background: the known keys serve meanwhile
    }
    try {
      return await this.keys!(header, token);
    } catch (error) {
      if (!(error instanceof errors.JWKSNoMatchingKey)) throw error;
      if (this.mayAttempt(UNKNOWN_KEY_COOLDOWN_MS)) {
        await this.refreshOrFail();
        return this.keys!(header, token);
      }
      if (this.failed) throw new IdentityProviderUnavailableError('the identity provider is unreachable');
      throw error;
    }
  };

  /** Whether a fetch may start now: after a failure, once a second; after a success, once per `coolDownMs`. */
  private mayAttempt(coolDownMs: number): boolean {
    return this.now() - this.attemptedAt >= (this.failed ? RETRY_AFTER_FAILURE_MS : coolDownMs);
  }

  private async refreshOrFail(): Promise<void> {
    try {
      await this.refresh();
    } catch (error) {
      throw new IdentityProviderUnavailableError('the identity provider is unreachable', { cause: error });
    }
  }

  /** One fetch at a time, shared by every token that waits on it. */
  private refresh(): Promise<void> {
    this.pending ??= this.fetchKeys().finally(() => (this.pending = undefined));
    return this.pending;
  }

  private async fetchKeys(): Promise<void> {
    this.attemptedAt = this.now();
    try {
      const response = await fetch(this.url, { signal: AbortSignal.timeout(FETCH_TIMEOUT_MS), redirect: 'manual' });
      if (!response.ok) throw new Error(`HTTP ${response.status}`);
      this.keys = createLocalJWKSet((await response.json()) as JSONWebKeySet);
      this.fetchedAt = this.now();
      this.failed = false;
    } catch (error) {
      this.failed = true;
      throw error;
    }
  }
}
