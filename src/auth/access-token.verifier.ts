import { createHash, timingSafeEqual } from 'node:crypto';
import { Injectable, Logger, OnModuleInit } from '@nestjs/common';
import { AppConfig } from '../config/app-config';
import { loadOrCreateDevToken } from './dev-token';
import { InvalidCredentialsException } from './invalid-credentials.exception';

// RFC 6750 b64token after a case-insensitive scheme name (RFC 7235).
const BEARER_HEADER = /^bearer +([A-Za-z0-9\-._~+/]+=*) *$/i;

/** Checks `Authorization` headers against the configured bearer tokens, in constant time. */
@Injectable()
export class AccessTokenVerifier implements OnModuleInit {
  private readonly logger = new Logger(AccessTokenVerifier.name);
  private digests: Buffer[] = [];

  constructor(private readonly config: AppConfig) {}

  onModuleInit(): void {
    const tokens = this.config.authTokens.length > 0 ? this.config.authTokens : [this.devToken()];
    this.digests = tokens.map(digest);
  }

  /** Throws `InvalidCredentialsException` unless the header carries an accepted bearer token. */
  verify(authorization: string | undefined): void {
    if (authorization === undefined || authorization === '') {
      throw new InvalidCredentialsException('Authorization header with a Bearer token is required', false);
    }
    const token = BEARER_HEADER.exec(authorization)?.[1];
    if (token === undefined) {
      throw new InvalidCredentialsException('Authorization header must have the form "Bearer <token>"', false);
    }
    const presented = digest(token);
    // Compare with every token, without stopping at a match, so timing says nothing about which.
    let accepted = false;
    for (const known of this.digests) accepted = timingSafeEqual(presented, known) || accepted;
    if (!accepted) throw new InvalidCredentialsException('Bearer token is invalid or expired', true);
  }

  private devToken(): string {
    const { token, created } = loadOrCreateDevToken(this.config.dataDir);
    const example = `curl -X POST http://localhost:${this.config.port}/plants -H "Authorization: Bearer ${token}" -H "Content-Type: application/json" -d '{"id": 1, "name": "Monstera", "tag": "tropical"}'`;
    this.logger.warn(
      `No AUTH_TOKENS configured: using the development token ${created ? 'just made' : 'kept'} in ${this.config.dataDir}. Try:\n  ${example}`,
    );
    return token;
  }
}

function digest(token: string): Buffer {
  return createHash('sha256').update(token).digest();
}
