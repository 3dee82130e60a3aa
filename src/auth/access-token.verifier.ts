import { createHash, timingSafeEqual } from 'node:crypto';
import { Injectable, Logger, OnModuleInit, ServiceUnavailableException } from '@nestjs/common';
import { AppConfig } from '../config/app-config';
import { IdentityProviderUnavailableError } from './identity-provider-unavailable.error';
import { AuthFailureLimiter } from './auth-failure-limiter';
import { loadOrCreateDevToken } from './dev-token';
import { InvalidCredentialsException } from './invalid-credentials.exception';
// Used as a type only, so not loaded here: onModuleInit imports it when JWTs are configured.
import { JwtVerifier } from './jwt.verifier';
import { withoutStack } from '../errors/without-stack';

// RFC 6750 b64token after a case-insensitive scheme name (RFC 7235).
const BEARER_HEADER = /^bearer +([A-Za-z0-9\-._~+/]+=*) *$/i;
const JWT_SHAPE = /^[\w-]+\.[\w-]+\.[\w-]*$/;

/**
 * Checks `Authorization` headers: against the static tokens (in constant time), then, when
 * configured, as a signed JWT.
 */
@Injectable()
export class AccessTokenVerifier implements OnModuleInit {
  private readonly logger = new Logger(AccessTokenVerifier.name);
  private digests: Buffer[] = [];
  private jwt?: JwtVerifier;
  /** The principal of each request verified so far (see `principalOf`). */
  private readonly principals = new WeakMap<object, string>();
  /** The token made for development when no AUTH_TOKENS are configured; printed once listening. */
  developmentToken?: string;

  constructor(
    private readonly config: AppConfig,
    private readonly failures: AuthFailureLimiter,
  ) {}

  async onModuleInit(): Promise<void> {
    if (this.config.jwt) {
      // jose is loaded only when JWTs are configured.
      const { JwtVerifier } = await import('./jwt.verifier');
      this.jwt = new JwtVerifier(this.config.jwt);
    }
    if (this.config.authTokens.length === 0 && !this.jwt) {
      const { token, created } = loadOrCreateDevToken(this.config.dataDir);
      this.logger.warn(
        `No AUTH_TOKENS configured: using the development token ${created ? 'just made' : 'kept'} in ${this.config.dataDir}`,
      );
      this.developmentToken = token;
    }
    this.digests = (this.developmentToken ? [this.developmentToken] : this.config.authTokens).map(digest);
  }

  /**
   * Verifies a request's `Authorization` header once: the early hook and the guard both ask, and
   * the second answer comes from the first.
   *
   * Settled synchronously on the hot path: a valid static token is accepted at once (returns
   * undefined); a JWT returns a promise. A refusal is a rejected promise, since it is first counted
   * against the client address (`AuthFailureLimiter`): `InvalidCredentialsException` (401), or a 429
   * past AUTH_FAILURES_PER_MINUTE. Every request pays for this check, and a promise per caller was a
   * share of each request's CPU and garbage.
   */
  verifyRequest(request: VerifiedRequest): Promise<void> | undefined {
    if (this.principals.has(request)) return undefined;
    let checked: string | Promise<string>;
    try {
      checked = this.check(request.headers.authorization);
    } catch (error) {
      return this.refuse(request, error);
    }
    if (typeof checked === 'string') {
      this.principals.set(request, checked);
      return undefined;
    }
    return checked.then(
      (principal) => void this.principals.set(request, principal),
      (error: unknown) => this.refuse(request, error),
    );
  }

  /** A failed authentication is counted against its address: the 401, or a 429 past AUTH_FAILURES_PER_MINUTE. */
  private async refuse(request: VerifiedRequest, error: unknown): Promise<never> {
    if (!(error instanceof InvalidCredentialsException)) throw error;
    throw await this.failures.failed(request.ip ?? 'unknown', error);
  }

  /**
   * Who a verified request is, whatever the spelling of its header: `token:<digest of the token>`
   * for a static token, `jwt:<digest of iss and sub>` for a JWT. Undefined until `verifyRequest`
   * has accepted the request. The rate limit keys on it; it holds no credential.
   */
  principalOf(request: object): string | undefined {
    return this.principals.get(request);
  }

  /**
   * The principal when the header holds a static token; a promise of it for a JWT-shaped token when
   * JWTs are on; throws otherwise.
   */
  private check(authorization: string | undefined): string | Promise<string> {
    if (authorization === undefined || authorization === '') {
      throw invalidCredentials('Authorization header with a Bearer token is required', false);
    }
    const token = BEARER_HEADER.exec(authorization)?.[1];
    if (token === undefined) {
      throw invalidCredentials('Authorization header must have the form "Bearer <token>"', false);
    }
    const presented = digest(token);
    // Compare with every token, without stopping at a match, so timing says nothing about which.
    let accepted = false;
    for (const known of this.digests) accepted = timingSafeEqual(presented, known) || accepted;
    if (accepted) return `token:${presented.toString('base64url')}`;
    if (this.jwt && JWT_SHAPE.test(token)) {
      return this.jwt.verify(token).then(
        ({ issuer, subject }) => `jwt:${digest(`${issuer}\n${subject}`).toString('base64url')}`,
        (error: unknown) => {
          if (error instanceof IdentityProviderUnavailableError) {
            throw new ServiceUnavailableException(
              'The identity provider (AUTH_JWKS_URL) is unreachable and the token is signed with a key not known yet; retry shortly',
            );
          }
          // Expired, no exp, wrong audience, a bad signature…: all the same 401 to the client.
          throw invalidCredentials('Bearer token is invalid or expired', true);
        },
      );
    }
    throw invalidCredentials('Bearer token is invalid or expired', true);
  }
}

/** What the verifier reads of a request: its header, and the client address for the failure count. */
interface VerifiedRequest {
  headers: { authorization?: string };
  ip?: string;
}

function invalidCredentials(message: string, tokenPresented: boolean): InvalidCredentialsException {
  return withoutStack(() => new InvalidCredentialsException(message, tokenPresented));
}

function digest(token: string): Buffer {
  return createHash('sha256').update(token).digest();
}
