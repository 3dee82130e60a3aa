import { hash, timingSafeEqual } from 'node:crypto';
import { Injectable, Logger, OnModuleInit, ServiceUnavailableException } from '@nestjs/common';
import { AppConfig } from '../config/app-config';
import { IdentityProviderUnavailableError } from './identity-provider-unavailable.error';
import { AuthFailureLimiter } from './auth-failure-limiter';
import { loadOrCreateDevToken } from './dev-token';
import { InvalidCredentialsException } from './invalid-credentials.exception';
// Used as a type only, so not loaded here: onModuleInit imports it when JWTs are configured.
import { JwtVerifier } from './jwt.verifier';
import { withoutStack } from '../common/errors/without-stack';

// RFC 6750 b64token after a case-insensitive scheme name (RFC 7235).
const BEARER_HEADER = /^bearer +([A-Za-z0-9\-._~+/]+=*) *$/i;
const JWT_SHAPE = /^[\w-]+\.[\w-]+\.[\w-]*$/;
/** The JWT scope of the admin permission. */
export const ADMIN_SCOPE = 'webhooks:manage';

/**
 * Checks `Authorization` headers: against the static tokens (in constant time), then, when
 * configured, as a signed JWT.
 */
@Injectable()
export class AccessTokenVerifier implements OnModuleInit {
  private readonly logger = new Logger(AccessTokenVerifier.name);
  private digests: Buffer[] = [];
  /**
   * The principal of each static token, made once at start-up, by its digest's index: each token of
   * AUTH_TOKENS (`digests`), then each of ADMIN_TOKENS (`adminDigests`). A request then costs no new
   * principal and no base64 of its digest.
   */
  private staticPrincipals: Principal[] = [];
  private jwt?: JwtVerifier;
  /** The principal of each request verified so far (see `principalOf`), and whether it holds the admin permission. */
  private readonly principals = new WeakMap<object, Principal>();
  private adminDigests: Buffer[] = [];
  /** The token made for development when no AUTH_TOKENS are configured; printed once listening. */
  developmentToken?: string;

  constructor(
    private readonly config: AppConfig,
    private readonly failures: AuthFailureLimiter,
  ) {}

  async onModuleInit(): Promise<void> {
    if (this.config.jwt) {
      // jose is loaded only when JWTs are configured.
      const { JwtVerifier } = await import('./jwt.verifier.js');
      this.jwt = new JwtVerifier(this.config.jwt);
    }
    if (this.config.authTokens.length === 0 && this.config.adminTokens.length === 0 && !this.jwt) {
      const { token, created } = loadOrCreateDevToken(this.config.dataDir);
      this.logger.warn(
        `No AUTH_TOKENS configured: using the development token ${created ? 'just made' : 'kept'} in ${this.config.dataDir}`,
      );
      this.developmentToken = token;
    }
    this.digests = (this.developmentToken ? [this.developmentToken] : this.config.authTokens).map(digest);
    this.adminDigests = this.config.adminTokens.map(digest);
    const adminDigests = this.adminDigests;
    this.staticPrincipals = [...this.digests, ...adminDigests].map((presented) => ({
      key: `token:${presented.toString('base64url')}`,
      // A token listed in both AUTH_TOKENS and ADMIN_TOKENS is an admin token.
      admin: adminDigests.some((known) => known.equals(presented)),
    }));
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
    let checked: Principal | Promise<Principal>;
    try {
      checked = this.check(request.headers.authorization);
    } catch (error) {
      return this.refuse(request, error);
    }
    if (!(checked instanceof Promise)) {
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
    return this.principals.get(request)?.key;
  }

  /**
   * Whether a verified request holds the admin permission (manage webhook endpoints): a token of
   * ADMIN_TOKENS, or a JWT whose `scope` holds `webhooks:manage`.
   */
  isAdmin(request: object): boolean {
    return this.principals.get(request)?.admin === true;
  }

  /**
   * The principal when the header holds a static token; a promise of it for a JWT-shaped token when
   * JWTs are on; throws otherwise.
   */
  private check(authorization: string | undefined): Principal | Promise<Principal> {
    if (authorization === undefined || authorization === '') {
      throw invalidCredentials('Authorization header with a Bearer token is required', false);
    }
    const token = BEARER_HEADER.exec(authorization)?.[1];
    if (token === undefined) {
      throw invalidCredentials('Authorization header must have the form "Bearer <token>"', false);
    }
    const presented = digest(token);
    // Compare with every token, without stopping at a match, so timing says nothing about which.
    let matched = -1;
    for (let index = 0; index < this.digests.length; index++) {
      if (timingSafeEqual(presented, this.digests[index])) matched = index;
    }
    for (let index = 0; index < this.adminDigests.length; index++) {
      if (timingSafeEqual(presented, this.adminDigests[index])) matched = this.digests.length + index;
    }
    if (matched >= 0) return this.staticPrincipals[matched];
    if (this.jwt && JWT_SHAPE.test(token)) {
      return this.jwt.verify(token).then(
        ({ issuer, subject, scopes }) => ({
          key: `jwt:${digest(`${issuer}\n${subject}`).toString('base64url')}`,
          admin: scopes.includes(ADMIN_SCOPE),
        }),
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

/** Who a request is (for the rate limit; holds no credential), and whether it may manage webhook endpoints. */
interface Principal {
  readonly key: string;
  readonly admin: boolean;
}

/** What the verifier reads of a request: its header, and the client address for the failure count. */
interface VerifiedRequest {
  headers: { authorization?: string };
  ip?: string;
}

function invalidCredentials(message: string, tokenPresented: boolean): InvalidCredentialsException {
  return withoutStack(() => new InvalidCredentialsException(message, tokenPresented));
}

/** SHA-256 in one call (no Hash object a request). */
function digest(token: string): Buffer {
  return hash('sha256', token, 'buffer');
}
