import { createServer, Server } from 'node:http';
import { AddressInfo } from 'node:net';
import { CryptoKey, errors, exportJWK, generateKeyPair, jwtVerify, SignJWT } from 'jose';
import { IdentityProviderUnavailableError } from './identity-provider-unavailable.error';
import { RemoteKeys } from './remote-keys';

describe('RemoteKeys (a JWKS served on 127.0.0.1)', () => {
  let known: CryptoKey;
  let rotated: CryptoKey;
  let published: object[];
  let up: boolean;
  let fetches: number;
  let jwks: Server;
  let clock: number;
  let keys: RemoteKeys;

  const publicJwk = async (key: CryptoKey, kid: string) => {
    const { n, e, kty } = await exportJWK(key);
    return { n, e, kty, kid, alg: 'RS256', use: 'sig' };
  };
  const sign = (key: CryptoKey, kid: string) =>
    new SignJWT({ sub: 's' }).setProtectedHeader({ alg: 'RS256', kid }).setExpirationTime('5m').sign(key);
  const verify = async (token: string) => (await jwtVerify(token, keys.getKey)).payload.sub;

  beforeAll(async () => {
    ({ privateKey: known } = await generateKeyPair('RS256', { extractable: true }));
    ({ privateKey: rotated } = await generateKeyPair('RS256', { extractable: true }));
    jwks = createServer((_req, res) => {
      fetches++;
      if (!up) return void res.writeHead(503).end();
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ keys: published }));
    });
    await new Promise<void>((resolve) => jwks.listen(0, '127.0.0.1', resolve));
  });
  afterAll(() => new Promise((resolve) => jwks.close(resolve)));
  beforeEach(async () => {
    published = [await publicJwk(known, 'known')];
    up = true;
    fetches = 0;
    clock = 1_000_000;
    keys = new RemoteKeys(new URL(`http://127.0.0.1:${(jwks.address() as AddressInfo).port}/jwks`), () => clock);
  });

  it('should keep the keys it fetched through an outage longer than their refresh age', async () => {
    expect(await verify(await sign(known, 'known'))).toBe('s');
    up = false;
    clock += 60 * 60_000; // an hour later, the provider still down
    expect(await verify(await sign(known, 'known'))).toBe('s');
    expect(await verify(await sign(known, 'known'))).toBe('s');
  });

  it('should answer a token with an unknown key while the provider is down as unavailable, not refused', async () => {
    await verify(await sign(known, 'known'));
    up = false;
    clock += 60_000;
    await expect(verify(await sign(rotated, 'rotated'))).rejects.toThrow(IdentityProviderUnavailableError);
    // Within the second after a failure, the provider is not asked again, and the answer stays the same.
    const before = fetches;
    await expect(verify(await sign(rotated, 'rotated'))).rejects.toThrow(IdentityProviderUnavailableError);
    expect(fetches).toBe(before);
  });

  it('should pick up a rotated key once the provider answers again', async () => {
    await verify(await sign(known, 'known'));
    up = false;
    clock += 60_000;
    await expect(verify(await sign(rotated, 'rotated'))).rejects.toThrow(IdentityProviderUnavailableError);
    up = true;
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

  it('should be unavailable when the first fetch fails', async () => {
    up = false;
    await expect(verify(await sign(known, 'known'))).rejects.toThrow(IdentityProviderUnavailableError);
  });
});
