import { createHash } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { ThrottlerGuard } from '@nestjs/throttler';

/**
 * Rate limit per bearer token (per client address when there is none). The token is hashed so
 * the limiter's storage never holds a credential.
 */
@Injectable()
export class TokenThrottlerGuard extends ThrottlerGuard {
  protected override async getTracker(request: Record<string, unknown>): Promise<string> {
    const { authorization } = request.headers as { authorization?: string };
    if (authorization) return `token:${createHash('sha256').update(authorization).digest('base64url')}`;
    return `ip:${String(request.ip)}`;
  }
}
