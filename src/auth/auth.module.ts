import { Module } from '@nestjs/common';
import { AccessTokenVerifier } from './access-token.verifier';
import { BearerAuthGuard } from './bearer-auth.guard';

@Module({
  providers: [AccessTokenVerifier, BearerAuthGuard],
  exports: [AccessTokenVerifier, BearerAuthGuard],
})
export class AuthModule {}
