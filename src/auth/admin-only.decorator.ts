import { applyDecorators, ForbiddenException, SetMetadata } from '@nestjs/common';
import { ApiBearerAuth } from '@nestjs/swagger';
import { ADMIN_SCOPE } from './access-token.verifier';
import { BEARER_REALM } from './invalid-credentials.exception';

export const ADMIN_ONLY_KEY = 'adminOnly';

/** Marks a controller whose routes need the admin permission (ADMIN_TOKENS, or a JWT with scope `webhooks:manage`). */
export const AdminOnly = (): ClassDecorator => applyDecorators(SetMetadata(ADMIN_ONLY_KEY, true), ApiBearerAuth());

/** Who holds the admin permission, in the words of a 403. */
export const ADMIN_PERMISSION = `the admin permission: a token of ADMIN_TOKENS, or a JWT whose scope holds ${ADMIN_SCOPE}`;

/**
 * A 403 for a valid credential without the admin permission, with the RFC 6750 challenge naming the
 * scope; `needs` says what else would do, where something does (`/metrics`: a token of METRICS_TOKENS).
 */
export class InsufficientScopeException extends ForbiddenException {
  readonly challenge = `${BEARER_REALM}, error="insufficient_scope", scope="${ADMIN_SCOPE}"`;

  constructor(needs = ADMIN_PERMISSION) {
    super(`This needs ${needs}`);
  }
}
