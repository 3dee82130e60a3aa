import { timingSafeEqual } from 'node:crypto';
import {
  HttpException,
  Injectable,
  Logger,
  OnModuleDestroy,
  OnModuleInit,
  ServiceUnavailableException,
} from '@nestjs/common';
import { AppConfig } from '../config/app-config';
import { IdentityProviderUnavailableError } from './identity-provider-unavailable.error';
import { AuthFailureLimiter, TooManyAuthFailuresException } from './auth-failure-limiter';
import { loadOrCreateDevToken } from './dev-token';
import { BEARER_REALM, InvalidCredentialsException } from './invalid-credentials.exception';
import { Refusal } from './refusal';
// Used as a type only, so not loaded here: onModuleInit imports it when JWTs are configured.
import { JwtVerifier } from './jwt.verifier';
import { withoutStack } from '../common/errors/without-stack';
import { BEARER_HEADER, digest } from './static-tokens';

const JWT_SHAPE = /^[\w-]+\.[\w-]+\.[\w-]*$/;
/** The JWT scope of the admin permission. */
export const ADMIN_SCOPE = 'webhooks:manage';

/**
 * Checks `Authorization` headers: against the static tokens (in constant time), then, when
 * configured, as a signed JWT.
 */
@Injectable()
export class AccessTokenVerifier implements OnModuleInit, OnModuleDestroy {
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

  /** Ends the JWKS fetches (the tries of the first, or one in flight): shutdown waits for none. */
  onModuleDestroy(): void {
    this.jwt?.stop();
  }

  /**
   * Checks a request's `Authorization` header once: the early hooks and the guard all ask, and the
   * later answers come from the first. Undefined once the credential has passed (its principal is
   * kept); otherwise the failure is counted against the client address (`AuthFailureLimiter`) and
   * the answer is its `Refusal`: the 401, or a 429 past AUTH_FAILURES_PER_MINUTE.
   *
   * Settled at once on the hot paths, a valid static token and a refused one alike (counted in this
   * process): no promise, no exception, no stack trace. A JWT, or a failure counted in Redis, gives
   * a promise, which rejects only for what is not a refusal (the identity provider away: 503). That
   * is not counted: an outage would otherwise lock out every client behind one address.
   */
  authenticate(request: VerifiedRequest): Refusal | undefined | Promise<Refusal | undefined> {
    if (this.principals.has(request)) return undefined;
    const checked = this.check(request.headers.authorization);
    if (checked instanceof Refusal) return this.failures.failed(request.ip ?? 'unknown', checked);
    if (!(checked instanceof Promise)) {
      this.principals.set(request, checked);
      return undefined;
    }
    return checked.then((outcome) => {
      if (outcome instanceof Refusal) return this.failures.failed(request.ip ?? 'unknown', outcome);
      this.principals.set(request, outcome);
      return undefined;
    });
  }

  /**
   * `authenticate` for Nest's pipeline (the guard) and the hooks that answer through it: undefined
   * once the credential has passed, else a promise that rejects with the refusal as an exception
   * (`InvalidCredentialsException`, `TooManyAuthFailuresException`, built without a stack trace),
   * which `AllExceptionsFilter` answers as `answerRefusal` would.
   */
  verifyRequest(request: VerifiedRequest): Promise<void> | undefined {
    const outcome = this.authenticate(request);
    if (outcome === undefined) return undefined;
    if (outcome instanceof Refusal) return Promise.reject(refusalException(outcome));
    return outcome.then((refusal) => {
      if (refusal !== undefined) throw refusalException(refusal);
    });
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
   * The principal when the header holds a static token; a promise of it (or of the refusal) for a
   * JWT-shaped token when JWTs are on; the 401's refusal otherwise.
   */
  private check(authorization: string | undefined): Principal | Refusal | Promise<Principal | Refusal> {
    if (authorization === undefined || authorization === '') return NO_CREDENTIAL;
    const token = BEARER_HEADER.exec(authorization)?.[1];
    if (token === undefined) return MALFORMED_HEADER;
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
          return INVALID_TOKEN;
        },
      );
    }
    return INVALID_TOKEN;
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

// The three 401s, made once (their bodies with them).
const NO_CREDENTIAL = Refusal.unauthorized('Authorization header with a Bearer token is required', false);
const MALFORMED_HEADER = Refusal.unauthorized('Authorization header must have the form "Bearer <token>"', false);
const INVALID_TOKEN = Refusal.unauthorized('Bearer token is invalid or expired', true);

/** A refusal as the exception Nest's pipeline throws and `AllExceptionsFilter` answers (no stack trace: a 4xx). */
function refusalException(refusal: Refusal): HttpException {
  return withoutStack(() =>
    refusal.status === 429
      ? new TooManyAuthFailuresException(refusal.retryAfterSeconds!, refusal.message)
      : new InvalidCredentialsException(refusal.message, refusal.challenge !== BEARER_REALM),
  );
}
