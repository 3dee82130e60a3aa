import { Module } from '@nestjs/common';
import { AccessTokenVerifier } from './access-token.verifier';
import { AuthFailureLimiter } from './auth-failure-limiter';
import { BearerAuthGuard } from './bearer-auth.guard';

@Module({
  providers: [AccessTokenVerifier, AuthFailureLimiter, BearerAuthGuard],
  exports: [AccessTokenVerifier, BearerAuthGuard],
})
export class AuthModule {}
