import { Logger } from '@nestjs/common';
import { createLocalJWKSet, errors, JSONWebKeySet, JWTVerifyGetKey } from 'jose';
import { originOf } from '../common/networks/host-of';
import { IdentityProviderUnavailableError } from './identity-provider-unavailable.error';

const FETCH_TIMEOUT_MS = 5000;
/** Keys older than this are fetched again, in the background: the known ones keep working meanwhile. */
const REFRESH_AFTER_MS = 10 * 60_000;
/** A token with an unknown `kid` fetches the keys again at most this often (they may have rotated). */
const UNKNOWN_KEY_COOLDOWN_MS = 30_000;
/** After a failed fetch, the next is tried at most this often, so an outage is not hammered. */
const RETRY_AFTER_FAILURE_MS = 1000;
/** The longest wait between two tries of the first fetch (the waits double from `RETRY_AFTER_FAILURE_MS`). */
const FIRST_FETCH_MAX_RETRY_MS = 30_000;

/**
 * The signing keys of AUTH_JWKS_URL, for jose's `jwtVerify`. Unlike jose's own remote key set:
 * - the first key set is fetched by `start`, not by tokens, and tried again with backoff while that
 *   fails, so no token, whatever it carries, makes a fetch of its own before keys are known (jose
 *   fetches again for every token until a fetch succeeds);
 * - keys already fetched keep working while the identity provider is unreachable, however long the
 *   outage (jose drops them once they are ten minutes old and the refetch fails);
 * - a token whose key is unknown while the provider is unreachable is told apart from a token with a
 *   bad key: it is `IdentityProviderUnavailableError` (503), not a refusal (401).
 * Once keys are known, a token fetches them again only when they are stale or its `kid` is unknown,
 * and never more than once a second after a failure.
 */
export class RemoteKeys {
  private readonly logger = new Logger(RemoteKeys.name);
  private keys?: JWTVerifyGetKey;
  private fetchedAt = -Infinity;
  private attemptedAt = -Infinity;
  private failed = false;
  private pending?: Promise<void>;
  private retry?: NodeJS.Timeout;
  /** Aborted by `stop`: a fetch in flight ends, and none starts after it. */
  private readonly stopped = new AbortController();

  constructor(
    private readonly url: URL,
    private readonly now: () => number = Date.now,
  ) {}

  /** Fetches the first key set in the background, trying again after 1 s, 2 s, 4 s… (at most 30 s) until it succeeds. */
  start(): void {
    this.fetchFirstKeys(RETRY_AFTER_FAILURE_MS);
  }

  /** Stops the tries and aborts a fetch in flight: shutdown waits for neither. */
  stop(): void {
    clearTimeout(this.retry);
    this.stopped.abort();
  }

  readonly getKey: JWTVerifyGetKey = async (header, token) => {
    if (this.keys === undefined) await this.firstKeysInFlight();
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

  private fetchFirstKeys(retryInMs: number): void {
    this.refresh().catch((error: unknown) => {
      if (this.stopped.signal.aborted) return;
      this.logger.warn(
        `The identity provider's keys (AUTH_JWKS_URL, ${originOf(this.url.href)}) could not be fetched ` +
          `(${reasonOf(error)}): JWTs are answered 503 until they are; next try in ${retryInMs / 1000} s`,
      );
      const next = Math.min(retryInMs * 2, FIRST_FETCH_MAX_RETRY_MS);
      this.retry = setTimeout(() => this.fetchFirstKeys(next), retryInMs).unref();
    });
  }

  /**
   * Before the first key set: a token waits for the fetch in flight, if there is one, but never starts
   * one (`start`'s tries do); unavailable when there are still no keys.
   */
  private async firstKeysInFlight(): Promise<void> {
    try {
      await this.pending;
    } catch (error) {
      throw new IdentityProviderUnavailableError('the identity provider is unreachable', { cause: error });
    }
    if (this.keys === undefined) throw new IdentityProviderUnavailableError('the identity provider is unreachable');
  }

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
      const signal = AbortSignal.any([this.stopped.signal, AbortSignal.timeout(FETCH_TIMEOUT_MS)]);
      const response = await fetch(this.url, { signal, redirect: 'manual' });
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

/** Why a fetch failed, for the log: the status, or the network error's code; never the URL's path or query. */
function reasonOf(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const cause = error.cause as { code?: unknown } | undefined;
  return typeof cause?.code === 'string' ? `${error.message}: ${cause.code}` : error.message;
}
