import { hash, timingSafeEqual } from 'node:crypto';

// RFC 6750 b64token after a case-insensitive scheme name (RFC 7235): every bearer check's header.
export const BEARER_HEADER = /^bearer +([A-Za-z0-9\-._~+/]+=*) *$/i;

/**
 * A list of static bearer tokens, kept as their SHA-256 digests and compared in constant time.
 * Asking costs no promise and counts nothing: a caller that refuses decides what a refusal is.
 */
export class StaticTokens {
  private readonly digests: readonly Buffer[];

  constructor(tokens: readonly string[]) {
    this.digests = tokens.map(digest);
  }

  /**
   * Whether `authorization` is `Bearer <one of the tokens>`. Every digest is compared, without
   * stopping at a match, so timing says nothing about which token, or whether one, matched.
   */
  accepts(authorization: string | undefined): boolean {
    if (this.digests.length === 0 || authorization === undefined) return false;
    const token = BEARER_HEADER.exec(authorization)?.[1];
    if (token === undefined) return false;
    const presented = digest(token);
    let matched = false;
    for (const known of this.digests) matched = timingSafeEqual(presented, known) || matched;
    return matched;
  }
}

/** A static token as it is kept and compared: its SHA-256, in one call (`crypto.hash`, half the CPU of a `createHash` object). */
export function digest(token: string): Buffer {
  return hash('sha256', token, 'buffer');
}
