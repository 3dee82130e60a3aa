import { createServer, Server } from 'node:http';
import { AddressInfo } from 'node:net';
import { CryptoKey, errors, exportJWK, generateKeyPair, jwtVerify, SignJWT } from 'jose';
import { IdentityProviderUnavailableError } from './identity-provider-unavailable.error';
import { RemoteKeys } from './remote-keys';

describe('RemoteKeys (a JWKS served on 127.0.0.1)', () => {
  let known: CryptoKey;
  let rotated: CryptoKey;
  let published: object[];
  /** How the provider answers: with the keys, 503, or never. */
  let answer: 'keys' | 'failure' | 'never';
  let fetches: number;
  let jwks: Server;
  let keys: RemoteKeys;

  const publicJwk = async (key: CryptoKey, kid: string) => {
    const { n, e, kty } = await exportJWK(key);
    return { n, e, kty, kid, alg: 'RS256', use: 'sig' };
  };
  const sign = (key: CryptoKey, kid: string) =>
    new SignJWT({ sub: 's' }).setProtectedHeader({ alg: 'RS256', kid }).setExpirationTime('5m').sign(key);
  const verify = async (token: string) => (await jwtVerify(token, keys.getKey)).payload.sub;
  const jwksUrl = () => new URL(`http://127.0.0.1:${(jwks.address() as AddressInfo).port}/jwks`);

  beforeAll(async () => {
    ({ privateKey: known } = await generateKeyPair('RS256', { extractable: true }));
    ({ privateKey: rotated } = await generateKeyPair('RS256', { extractable: true }));
    jwks = createServer((_req, res) => {
      fetches++;
      if (answer === 'never') return;
      if (answer === 'failure') return void res.writeHead(503).end();
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ keys: published }));
    });
    await new Promise<void>((resolve) => jwks.listen(0, '127.0.0.1', resolve));
  });
  afterAll(() => {
    jwks.closeAllConnections();
    return new Promise((resolve) => jwks.close(resolve));
  });
  beforeEach(async () => {
    published = [await publicJwk(known, 'known')];
    answer = 'keys';
    fetches = 0;
  });
  afterEach(() => keys.stop());

  describe('once keys are known', () => {
    let clock: number;
    beforeEach(() => {
      clock = 1_000_000;
      keys = new RemoteKeys(jwksUrl(), () => clock);
      keys.start();
    });

    it('should keep the keys it fetched through an outage longer than their refresh age', async () => {
      expect(await verify(await sign(known, 'known'))).toBe('s');
      answer = 'failure';
      clock += 60 * 60_000; // an hour later, the provider still down
      expect(await verify(await sign(known, 'known'))).toBe('s');
      expect(await verify(await sign(known, 'known'))).toBe('s');
    });

    it('should answer a token with an unknown key while the provider is down as unavailable, not refused', async () => {
      await verify(await sign(known, 'known'));
      answer = 'failure';
      clock += 60_000;
      await expect(verify(await sign(rotated, 'rotated'))).rejects.toThrow(IdentityProviderUnavailableError);
      // Within the second after a failure, the provider is not asked again, and the answer stays the same.
      const before = fetches;
      await expect(verify(await sign(rotated, 'rotated'))).rejects.toThrow(IdentityProviderUnavailableError);
      expect(fetches).toBe(before);
    });

    it('should pick up a rotated key once the provider answers again', async () => {
      await verify(await sign(known, 'known'));
      answer = 'failure';
      clock += 60_000;
      await expect(verify(await sign(rotated, 'rotated'))).rejects.toThrow(IdentityProviderUnavailableError);
      answer = 'keys';
      published = [await publicJwk(known, 'known'), await publicJwk(rotated, 'rotated')];
      clock += 1000;
      expect(await verify(await sign(rotated, 'rotated'))).toBe('s');
    });

    it('should refuse an unknown key as such while the provider answers (no refetch per token)', async () => {
      await verify(await sign(known, 'known'));
      clock += 60_000;
      await expect(verify(await sign(rotated, 'stranger'))).rejects.toThrow(errors.JWKSNoMatchingKey);
      const before = fetches;
      await expect(verify(await sign(rotated, 'stranger'))).rejects.toThrow(errors.JWKSNoMatchingKey);
      expect(fetches).toBe(before);
    });
  });

  // Jest's fake timers run the tries' timer; the fetches are real requests (Node's fetch keeps its own timers).
  describe('before the first key set', () => {
    beforeEach(() => {
      jest.useFakeTimers();
      keys = new RemoteKeys(jwksUrl());
    });
    afterEach(() => jest.useRealTimers());

    /** Verifies a burst of tokens, a known and an unknown key in turn: each unavailable. */
    const burstUnavailable = async (count: number) => {
      const tokens = await Promise.all([sign(known, 'known'), sign(rotated, 'rotated')]);
      for (let index = 0; index < count; index++) {
        await expect(verify(tokens[index % 2])).rejects.toThrow(IdentityProviderUnavailableError);
      }
    };

    it('should fetch the keys at start, a token waiting for that fetch', async () => {
      keys.start();
      expect(await verify(await sign(known, 'known'))).toBe('s');
      expect(fetches).toBe(1);
    });

    it('should make no fetch for a token while the first fails, trying again after 1, 2, 4… s, at most 30 s', async () => {
      answer = 'failure';
      keys.start();
      await burstUnavailable(30); // the first waits for the start-up fetch; none starts a fetch
      expect(fetches).toBe(1);
      for (const [index, waitMs] of [1000, 2000, 4000, 8000, 16000, 30_000, 30_000].entries()) {
        await jest.advanceTimersByTimeAsync(waitMs - 1);
        await burstUnavailable(4);
        expect(fetches).toBe(1 + index);
        await jest.advanceTimersByTimeAsync(1);
        await burstUnavailable(1); // waits for the try in flight, if it has not failed already
        expect(fetches).toBe(2 + index);
      }
    });

    it('should stop trying once the keys are fetched', async () => {
      answer = 'failure';
      keys.start();
      await burstUnavailable(1);
      answer = 'keys';
      await jest.advanceTimersByTimeAsync(1000);
      expect(await verify(await sign(known, 'known'))).toBe('s');
      expect(jest.getTimerCount()).toBe(0);
      await jest.advanceTimersByTimeAsync(5 * 60_000);
      expect(fetches).toBe(2);
    });

    it('should stop trying when stopped', async () => {
      answer = 'failure';
      keys.start();
      await burstUnavailable(1);
      keys.stop();
      expect(jest.getTimerCount()).toBe(0);
      await jest.advanceTimersByTimeAsync(5 * 60_000);
      expect(fetches).toBe(1);
    });

    it('should abort a fetch in flight when stopped, not wait for its timeout', async () => {
      answer = 'never';
      keys.start();
      const waiting = verify(await sign(known, 'known'));
      keys.stop();
      const error = await waiting.catch((reason: unknown) => reason);
      expect(error).toBeInstanceOf(IdentityProviderUnavailableError);
      expect(((error as Error).cause as Error).name).toBe('AbortError');
    });
  });
});
