import { applyDecorators, ForbiddenException, SetMetadata } from '@nestjs/common';
import { ApiBearerAuth } from '@nestjs/swagger';
import { ADMIN_SCOPE } from './access-token.verifier';
import { BEARER_REALM } from './invalid-credentials.exception';

export const ADMIN_ONLY_KEY = 'adminOnly';

/** Marks a controller whose routes need the admin permission (ADMIN_TOKENS, or a JWT with scope `webhooks:manage`). */
export const AdminOnly = (): ClassDecorator => applyDecorators(SetMetadata(ADMIN_ONLY_KEY, true), ApiBearerAuth());

/** A 403 for a valid credential without the admin permission, with the RFC 6750 challenge naming the scope. */
export class InsufficientScopeException extends ForbiddenException {
  readonly challenge = `${BEARER_REALM}, error="insufficient_scope", scope="${ADMIN_SCOPE}"`;

  constructor() {
    super(`This needs the admin permission: a token of ADMIN_TOKENS, or a JWT whose scope holds ${ADMIN_SCOPE}`);
  }
}
