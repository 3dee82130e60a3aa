import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Controller, ExecutionContext, Get, UnauthorizedException } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { ExecutionContextHost } from '@nestjs/core/helpers/execution-context-host';
import { AppConfig } from '../config/app-config';
import { loadConfig } from '../config/load-config';
import { Registry } from 'prom-client';
import { RateLimitStorage } from '../limit-storage/rate-limit.storage';
import { AccessTokenVerifier } from './access-token.verifier';
import { AuthFailureLimiter } from './auth-failure-limiter';
import { BearerAuthGuard } from './bearer-auth.guard';
import { InvalidCredentialsException } from './invalid-credentials.exception';
import { Public } from './public.decorator';
import { AdminOnly, InsufficientScopeException } from './admin-only.decorator';
import { onCallerTrusted } from '../tracing/trace-context';

@Controller()
class ExampleController {
  @Get('open')
  @Public()
  open() {}

  @Get('closed')
  closed() {}
}

// One handler inherited by two controllers, admin-only in one of them.
@Controller()
class OpenEndpointsController {
  @Get('endpoints')
  endpoints() {}
}
@Controller()
@AdminOnly()
class AdminEndpointsController extends OpenEndpointsController {}

function contextFor(
  handler: keyof ExampleController,
  authorization?: string,
  request: object = { headers: { authorization } },
): ExecutionContext {
  // Nest's own context, as its router makes it for an HTTP handler: [request, reply, next].
  return new ExecutionContextHost(
    [request, {}, () => undefined],
    ExampleController,
    ExampleController.prototype[handler],
  );
}

function endpointsContext(controller: typeof OpenEndpointsController, authorization: string): ExecutionContext {
  return new ExecutionContextHost(
    [{ headers: { authorization } }, {}, () => undefined],
    controller,
    OpenEndpointsController.prototype.endpoints,
  );
}

async function verifierFor(config: AppConfig): Promise<AccessTokenVerifier> {
  const verifier = new AccessTokenVerifier(
    config,
    new AuthFailureLimiter(config, new RateLimitStorage(config, new Registry())),
  );
  await verifier.onModuleInit();
  return verifier;
}

describe('BearerAuthGuard', () => {
  const config = loadConfig({ AUTH_TOKENS: 'first-token, second-token' });
  let guard: BearerAuthGuard;
  beforeAll(async () => (guard = new BearerAuthGuard(new Reflector(), await verifierFor(config))));

  const rejection = async (handler: keyof ExampleController, authorization?: string) => {
    try {
      await guard.canActivate(contextFor(handler, authorization));
    } catch (error) {
      return error as InvalidCredentialsException;
    }
    throw new Error('expected the guard to refuse');
  };

  describe('when the route is @Public()', () => {
    it('should let a request without a credential through', () => {
      expect(guard.canActivate(contextFor('open'))).toBe(true);
    });
  });

  describe('when the route is protected', () => {
    it.each(['Bearer first-token', 'Bearer second-token', 'bearer first-token', 'BEARER  second-token'])(
      'should accept %s',
      (header) => {
        // A static token is settled at once: Nest gets a boolean and awaits nothing.
        expect(guard.canActivate(contextFor('closed', header))).toBe(true);
      },
    );

    it('should refuse a missing header with the bare realm challenge', async () => {
      const error = await rejection('closed');
      expect(error).toBeInstanceOf(UnauthorizedException);
      expect(error.message).toBe('Authorization header with a Bearer token is required');
      expect(error.challenge).toBe('Bearer realm="plant-store"');
    });

    it.each(['Basic Zmlyc3QtdG9rZW4=', 'Bearer', 'Bearer two tokens', 'first-token'])(
      'should refuse the malformed header %j',
      async (header) => {
        const error = await rejection('closed', header);
        expect(error.message).toBe('Authorization header must have the form "Bearer <token>"');
        expect(error.challenge).toBe('Bearer realm="plant-store"');
      },
    );

    it.each(['Bearer first-toke', 'Bearer first-tokenx', 'Bearer First-token'])(
      'should refuse the unknown token in %j with invalid_token',
      async (header) => {
        const error = await rejection('closed', header);
        expect(error.message).toBe('Bearer token is invalid or expired');
        expect(error.challenge).toBe('Bearer realm="plant-store", error="invalid_token"');
      },
    );
  });

  describe('with admin tokens', () => {
    const adminConfig = loadConfig({
      AUTH_TOKENS: 'user-token, shared-token',
      ADMIN_TOKENS: 'admin-token, shared-token',
    });
    let verifier: AccessTokenVerifier;
    let adminGuard: BearerAuthGuard;
    beforeAll(async () => {
      verifier = await verifierFor(adminConfig);
      adminGuard = new BearerAuthGuard(new Reflector(), verifier);
    });

    it('should let only an admin token through an @AdminOnly() controller, a token of both lists included', () => {
      // Each call repeated: the answer must not depend on what the guard saw before.
      for (let round = 0; round < 2; round++) {
        expect(adminGuard.canActivate(endpointsContext(AdminEndpointsController, 'Bearer admin-token'))).toBe(true);
        expect(adminGuard.canActivate(endpointsContext(AdminEndpointsController, 'Bearer shared-token'))).toBe(true);
        expect(() => adminGuard.canActivate(endpointsContext(AdminEndpointsController, 'Bearer user-token'))).toThrow(
          InsufficientScopeException,
        );
      }
    });

    it('should read @AdminOnly() per controller when two controllers share a handler', () => {
      expect(adminGuard.canActivate(endpointsContext(OpenEndpointsController, 'Bearer user-token'))).toBe(true);
      expect(() => adminGuard.canActivate(endpointsContext(AdminEndpointsController, 'Bearer user-token'))).toThrow(
        InsufficientScopeException,
      );
      expect(adminGuard.canActivate(endpointsContext(OpenEndpointsController, 'Bearer user-token'))).toBe(true);
    });

    it("should trust a caller's trace only once its credential passes, and the admin permission where asked", async () => {
      const trusted: object[] = [];
      onCallerTrusted((request) => trusted.push(request));
      const asked = (controller: typeof OpenEndpointsController, authorization: string) => {
        const context = endpointsContext(controller, authorization);
        try {
          expect(adminGuard.canActivate(context)).toBe(true);
        } catch (error) {
          expect(error).toBeInstanceOf(InsufficientScopeException);
        }
        return trusted.includes(context.getArgByIndex(0));
      };
      try {
        expect(asked(OpenEndpointsController, 'Bearer user-token')).toBe(true);
        expect(asked(AdminEndpointsController, 'Bearer admin-token')).toBe(true);
        expect(asked(AdminEndpointsController, 'Bearer user-token')).toBe(false);
        const refused = { headers: { authorization: 'Bearer not-a-token' } };
        await expect(adminGuard.canActivate(contextFor('closed', undefined, refused))).rejects.toThrow(
          InvalidCredentialsException,
        );
        expect(trusted).not.toContain(refused);
      } finally {
        onCallerTrusted(() => undefined);
      }
    });

    it('should give one principal per token, whatever the spelling of the header, and none to share between tokens', () => {
      const principal = (header: string) => {
        const request = { headers: { authorization: header } };
        expect(adminGuard.canActivate(contextFor('closed', undefined, request))).toBe(true);
        return verifier.principalOf(request);
      };
      const user = principal('Bearer user-token');
      expect(user).toMatch(/^token:[A-Za-z0-9_-]{43}$/);
      expect(principal('bearer   user-token')).toBe(user);
      const keys = new Set([user, principal('Bearer admin-token'), principal('Bearer shared-token')]);
      expect(keys.size).toBe(3);
    });
  });

  describe('when no tokens are configured outside production', () => {
    let dataDir: string;
    beforeEach(() => (dataDir = mkdtempSync(join(tmpdir(), 'plant-store-guard-'))));
    afterEach(() => rmSync(dataDir, { recursive: true, force: true }));

    it('should make one development token, keep it, and accept only it', async () => {
      const devConfig = loadConfig({ DATA_DIR: dataDir });
      const first = new BearerAuthGuard(new Reflector(), await verifierFor(devConfig));
      const token = readFileSync(join(dataDir, 'dev-token'), 'utf8').trim();
      expect(token).toMatch(/^dev_[A-Za-z0-9_-]{32}$/);
      expect(first.canActivate(contextFor('closed', `Bearer ${token}`))).toBe(true);
      // A restart reads the same token back.
      const second = new BearerAuthGuard(new Reflector(), await verifierFor(devConfig));
      expect(second.canActivate(contextFor('closed', `Bearer ${token}`))).toBe(true);
      // A refusal is counted against the client address first, so it comes as a rejected promise.
      await expect(second.canActivate(contextFor('closed', 'Bearer dev_other'))).rejects.toThrow(
        InvalidCredentialsException,
      );
    });
  });
});
