import { UnauthorizedException } from '@nestjs/common';

export const BEARER_REALM = 'Bearer realm="plant-store"';

/** A 401 that carries the RFC 6750 challenge the error filter sends as `WWW-Authenticate`. */
export class InvalidCredentialsException extends UnauthorizedException {
  readonly challenge: string;

  constructor(message: string, tokenPresented: boolean) {
    super(message);
    this.challenge = tokenPresented ? `${BEARER_REALM}, error="invalid_token"` : BEARER_REALM;
  }
}
