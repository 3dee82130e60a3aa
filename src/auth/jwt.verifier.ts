import { createPublicKey, KeyObject } from 'node:crypto';
import { JWTHeaderParameters, jwtVerify, JWTVerifyGetKey } from 'jose';
import { JwtConfig } from '../config/app-config';
import { RemoteKeys } from './remote-keys';

// Asymmetric algorithms only: an HMAC or `none` token is refused whatever it claims.
const ALGORITHMS = ['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'ES256', 'ES384', 'ES512', 'EdDSA'];
// Seconds of clock skew allowed on exp and nbf (declared in the README).
export const CLOCK_TOLERANCE = 30;
/**
 * The `typ` values of an access token, lower-case and without `application/` (`isAccessTokenType`):
 * a plain JWT, or an RFC 9068 access token. Any other (an ID token's `JWT+id`, a logout token's
 * `logout+jwt`…) is a token meant for something else.
 */
const ACCESS_TOKEN_TYPES = new Set(['jwt', 'at+jwt']);

/**
 * Verifies signed JWT bearer tokens: signature (JWKS or a PEM key), a required exp (jose checks it
 * only when present), nbf, issuer, audience and `typ`. Rejects with `IdentityProviderUnavailableError`
 * when the token's key is unknown and the JWKS URL cannot be reached.
 */
export class JwtVerifier {
  private readonly key: KeyObject | JWTVerifyGetKey;
  private readonly remoteKeys?: RemoteKeys;

  /** With a JWKS URL, starts fetching its keys in the background (`stop` ends that). */
  constructor(private readonly config: JwtConfig) {
    if (config.jwksUrl) {
      this.remoteKeys = new RemoteKeys(new URL(config.jwksUrl));
      this.remoteKeys.start();
      this.key = this.remoteKeys.getKey;
    } else {
      this.key = createPublicKey(config.publicKey!);
    }
  }

  /** Ends the key fetches (see `RemoteKeys.stop`). */
  stop(): void {
    this.remoteKeys?.stop();
  }

  /**
   * Resolves to who the token names when it verifies; rejects otherwise (the reason stays out of the
   * response). The issuer is the configured one; a token without `sub` names no one in particular.
   * Its `typ`, when present, must be an access token's (`ACCESS_TOKEN_TYPES`).
   */
  async verify(token: string): Promise<{ issuer: string; subject: string; scopes: string[] }> {
    const options = {
      issuer: this.config.issuer,
      audience: this.config.audience,
      algorithms: ALGORITHMS,
      clockTolerance: CLOCK_TOLERANCE,
      requiredClaims: ['exp'],
    };
    const { payload, protectedHeader } =
      this.key instanceof KeyObject
        ? await jwtVerify(token, this.key, options)
        : await jwtVerify(token, this.key, options);
    // jose's own `typ` option takes one value and requires the header: an access token may omit it.
    if (!isAccessTokenType(protectedHeader)) throw new Error('not an access token (typ)');
    // `scope`: space-separated (RFC 8693); anything else holds no scope.
    const scopes = typeof payload.scope === 'string' ? payload.scope.split(' ').filter(Boolean) : [];
    return { issuer: this.config.issuer, subject: payload.sub ?? '', scopes };
  }
}

/**
 * Whether a token's `typ` is absent or an access token's, compared as RFC 7515 (4.1.9) says of a media
 * type: case-insensitive, with `application/` implied (`application/at+jwt` is `at+jwt`).
 */
function isAccessTokenType({ typ }: JWTHeaderParameters): boolean {
  if (typ === undefined) return true;
  return typeof typ === 'string' && ACCESS_TOKEN_TYPES.has(typ.toLowerCase().replace(/^application\//, ''));
}
