import { CryptoKey, exportSPKI, generateKeyPair, SignJWT } from 'jose';
import { AccessTokenVerifier } from '../../src/auth/access-token.verifier';
import { request } from '../support/http';
import { createTestApp, TEST_METRICS_TOKEN, TEST_TOKEN, TestApp } from '../support/test-app';

const ADMIN = 'admin-token-0123456789abcdef-0123456789';
const ISSUER = 'https://idp.test/';
const AUDIENCE = 'plant-store';
const FORBIDDEN = {
  error: 403,
  message:
    'This needs a token of METRICS_TOKENS, or the admin permission: a token of ADMIN_TOKENS, or a JWT whose scope holds webhooks:manage',
};
const INSUFFICIENT_SCOPE = 'Bearer realm="plant-store", error="insufficient_scope", scope="webhooks:manage"';
const INVALID = { error: 401, message: 'Bearer token is invalid or expired' };

// CONTRACT.md, "Rulings of round 6": /metrics needs the admin permission or a token of METRICS_TOKENS;
// any other credential gets 403; a metrics token is checked before the failed-authentication count.
describe('who may read /metrics (e2e)', () => {
  let server: TestApp;
  let signer: CryptoKey;
  const jwt = (scope?: string) =>
    new SignJWT({ sub: 'client-1', ...(scope === undefined ? {} : { scope }) })
      .setProtectedHeader({ alg: 'ES256' })
      .setIssuer(ISSUER)
      .setAudience(AUDIENCE)
      .setExpirationTime('5m')
      .sign(signer);
  const scrape = (auth: string | false, from = '203.0.113.1') =>
    request(`${server.url}/metrics`, { method: 'GET', auth, headers: { 'x-forwarded-for': from } });

  beforeAll(async () => {
    const { publicKey, privateKey } = await generateKeyPair('ES256');
    signer = privateKey;
    server = await createTestApp({
      ADMIN_TOKENS: ADMIN,
      AUTH_JWT_PUBLIC_KEY: await exportSPKI(publicKey),
      AUTH_JWT_ISSUER: ISSUER,
      AUTH_JWT_AUDIENCE: AUDIENCE,
      AUTH_FAILURES_PER_MINUTE: '2',
      TRUST_PROXY: '127.0.0.1/8',
    });
  });
  afterAll(() => server.destroy());

  it('should serve a scrape with a token of METRICS_TOKENS, an admin token or a JWT with the admin scope', async () => {
    for (const token of [TEST_METRICS_TOKEN, ADMIN, await jwt('plants webhooks:manage')]) {
      const answer = await scrape(`Bearer ${token}`);
      expect(answer.status).toBe(200);
      expect(answer.headers.get('content-type')).toMatch(/^text\/plain/);
      expect(answer.text).toContain('# TYPE http_requests_total counter');
    }
  });

  it('should answer a plants token 403 with the Error body, an AUTH_TOKENS token or a JWT without the admin scope', async () => {
    for (const token of [TEST_TOKEN, await jwt(), await jwt('plants')]) {
      const answer = await scrape(`Bearer ${token}`);
      expect([answer.status, answer.body]).toEqual([403, FORBIDDEN]);
      expect(answer.headers.get('www-authenticate')).toBe(INSUFFICIENT_SCOPE);
      expect(answer.headers.get('content-type')).toBe('application/json; charset=utf-8');
    }
  });

  it('should answer no credential or an unknown token 401, as every protected route does', async () => {
    const missing = await scrape(false, '203.0.113.2');
    expect([missing.status, missing.body]).toEqual([
      401,
      { error: 401, message: 'Authorization header with a Bearer token is required' },
    ]);
    const unknown = await scrape('Bearer not-a-token', '203.0.113.2');
    expect([unknown.status, unknown.body]).toEqual([401, INVALID]);
    expect(unknown.headers.get('www-authenticate')).toBe('Bearer realm="plant-store", error="invalid_token"');
  });

  it('should never count a scrape as a failed authentication, and serve it past the limit too', async () => {
    const from = '203.0.113.3';
    for (let scrapes = 0; scrapes < 5; scrapes++)
      expect((await scrape(`Bearer ${TEST_METRICS_TOKEN}`, from)).status).toBe(200);
    // The address's whole budget of failures (AUTH_FAILURES_PER_MINUTE=2) is still there…
    const failures = [];
    for (let tries = 0; tries < 3; tries++) failures.push((await scrape('Bearer wrong', from)).status);
    expect(failures).toEqual([401, 401, 429]);
    // …and past it, the scrape job still reads.
    expect((await scrape(`Bearer ${TEST_METRICS_TOKEN}`, from)).status).toBe(200);
  });

  it('should know a metrics token on /metrics only: elsewhere it is an unknown token (401)', async () => {
    const auth = `Bearer ${TEST_METRICS_TOKEN}`;
    // Each from its own address: each is a failed authentication there.
    const answers = [
      await request(`${server.url}/plants`, {
        body: { id: 1, name: 'x' },
        auth,
        headers: { 'x-forwarded-for': '203.0.113.4' },
      }),
      await request(`${server.url}/plants`, { method: 'GET', auth, headers: { 'x-forwarded-for': '203.0.113.5' } }),
      await request(`${server.url}/webhooks/endpoints`, {
        method: 'GET',
        auth,
        headers: { 'x-forwarded-for': '203.0.113.6' },
      }),
    ];
    expect(answers.map(({ status, body }) => [status, body])).toEqual([
      [401, INVALID],
      [401, INVALID],
      [401, INVALID],
    ]);
  });
});

describe('/metrics with the development token (e2e)', () => {
  let server: TestApp;
  beforeAll(async () => (server = await createTestApp({ AUTH_TOKENS: '', METRICS_TOKENS: '' })));
  afterAll(() => server.destroy());

  it('should answer the development token 403: it is a plants token', async () => {
    const token = server.app.get(AccessTokenVerifier).developmentToken;
    expect(token).toEqual(expect.any(String));
    expect((await request(`${server.url}/plants`, { method: 'GET', auth: `Bearer ${token}` })).status).toBe(200);
    const answer = await request(`${server.url}/metrics`, { method: 'GET', auth: `Bearer ${token}` });
    expect([answer.status, answer.body]).toEqual([403, FORBIDDEN]);
  });
});
