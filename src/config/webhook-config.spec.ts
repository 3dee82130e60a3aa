import { resolve } from 'node:path';
import { ConfigError } from './config.error';
import { loadConfig } from './load-config';

const SECRET = `whsec_${Buffer.alloc(32, 7).toString('base64')}`;
const OTHER = `whsec_${Buffer.alloc(24, 9).toString('base64')}`;
const KEY = Buffer.alloc(32, 3).toString('base64');
const OLD_KEY = Buffer.alloc(32, 4).toString('base64');
const base = { AUTH_TOKENS: 'token', WEBHOOK_URLS: 'https://hooks.example/plants', WEBHOOK_SECRET: SECRET };

describe('webhook configuration', () => {
  it('should declare no endpoint when WEBHOOK_URLS is unset or empty', () => {
    expect(loadConfig({ AUTH_TOKENS: 'token' }).webhooks.configured).toEqual({ urls: [], secrets: [] });
    expect(loadConfig({ AUTH_TOKENS: 'token', WEBHOOK_URLS: '' }).webhooks.configured).toEqual({
      urls: [],
      secrets: [],
    });
  });

  it("should default to the Standard Webhooks schedule, a 15 s timeout, 7 days of retention and the anchors' windows", () => {
    expect(loadConfig(base).webhooks).toEqual({
      configured: { urls: ['https://hooks.example/plants'], secrets: [SECRET] },
      timeoutMs: 15000,
      retryScheduleMs: [5, 300, 1800, 7200, 18000, 36000, 50400, 72000, 86400].map((s) => s * 1000),
      retentionMs: 7 * 86_400_000,
      concurrency: 64,
      endpointConcurrency: 16,
      pollIntervalMs: 1000,
      secretOverlapMs: 24 * 3_600_000,
      disableAfterMs: 5 * 86_400_000,
      blockedNetworks: [],
      allowedNetworks: [],
      httpsOnly: false,
      maxEndpoints: 100,
      secretsKey: { kind: 'data-dir', dataDir: resolve('./data') },
    });
  });

  it('should read several URLs and secrets, and every setting in every unit', () => {
    const config = loadConfig({
      ...base,
      WEBHOOK_URLS: 'http://10.20.0.7:9000/a, https://b.example/hook?token=x',
      WEBHOOK_SECRET: `${SECRET},${OTHER}`,
      WEBHOOK_TIMEOUT_MS: '2500',
      WEBHOOK_RETRY_SCHEDULE: '500ms,1s,2m,3h,1d',
      WEBHOOK_RETENTION: '36h',
      WEBHOOK_CONCURRENCY: '4',
      WEBHOOK_ENDPOINT_CONCURRENCY: '2',
      WEBHOOK_POLL_INTERVAL_MS: '250',
      WEBHOOK_SECRET_OVERLAP: '1h',
      WEBHOOK_DISABLE_AFTER: '2s',
      WEBHOOK_BLOCKED_NETWORKS: '10.0.0.0/8, ::1/128',
      WEBHOOK_ALLOWED_NETWORKS: '10.20.0.0/16 ,fd00:20::/48',
      WEBHOOK_MAX_ENDPOINTS: '7',
      WEBHOOK_SECRETS_KEY: `${KEY}, ${OLD_KEY}`,
    }).webhooks;
    expect(config).toEqual({
      configured: { urls: ['http://10.20.0.7:9000/a', 'https://b.example/hook?token=x'], secrets: [SECRET, OTHER] },
      timeoutMs: 2500,
      retryScheduleMs: [500, 1000, 120_000, 10_800_000, 86_400_000],
      retentionMs: 36 * 3_600_000,
      concurrency: 4,
      endpointConcurrency: 2,
      pollIntervalMs: 250,
      secretOverlapMs: 3_600_000,
      disableAfterMs: 2000,
      blockedNetworks: ['10.0.0.0/8', '::1/128'],
      allowedNetworks: ['10.20.0.0/16', 'fd00:20::/48'],
      httpsOnly: false,
      maxEndpoints: 7,
      secretsKey: { kind: 'keys', keys: [KEY, OLD_KEY] },
    });
  });

  describe('WEBHOOK_SECRETS_KEY', () => {
    const postgres = { AUTH_TOKENS: 'token', DATABASE_URL: 'postgres://db/plants' };
    const production = { AUTH_TOKENS: 'a'.repeat(32), NODE_ENV: 'production' };
    const admin = { ADMIN_TOKENS: 'b'.repeat(32) };
    const jwt = {
      AUTH_JWT_PUBLIC_KEY: '-----BEGIN PUBLIC KEY-----\nMCowBQYDK2VwAyEA\n-----END PUBLIC KEY-----',
      AUTH_JWT_ISSUER: 'issuer',
      AUTH_JWT_AUDIENCE: 'audience',
    };

    it('should make a key in DATA_DIR on SQLite outside production, whatever the credentials', () => {
      expect(loadConfig({ AUTH_TOKENS: 'token', DATA_DIR: '/tmp/plants', ...admin }).webhooks.secretsKey).toEqual({
        kind: 'data-dir',
        dataDir: '/tmp/plants',
      });
    });

    it('should need no key without an admin credential: nothing can store an endpoint secret', () => {
      expect(loadConfig(postgres).webhooks.secretsKey).toEqual({ kind: 'none' });
      expect(loadConfig(production).webhooks.secretsKey).toEqual({ kind: 'none' });
    });

    it.each([
      ['PostgreSQL with ADMIN_TOKENS', { ...postgres, ...admin }, 'with PostgreSQL'],
      ['PostgreSQL with JWTs', { ...postgres, ...jwt }, 'with PostgreSQL'],
      ['production with ADMIN_TOKENS', { ...production, ...admin }, 'when NODE_ENV=production'],
      ['production with JWTs', { ...production, ...jwt }, 'when NODE_ENV=production'],
    ])('should stop start-up without one on %s, with one line naming it', (_name, env, where) => {
      expect(() => loadConfig(env)).toThrow(
        new ConfigError(
          `Invalid configuration: WEBHOOK_SECRETS_KEY is required ${where} when ADMIN_TOKENS or JWTs are configured: it encrypts the webhook endpoint secrets (make one with: openssl rand -base64 32)`,
        ),
      );
      expect(loadConfig({ ...env, WEBHOOK_SECRETS_KEY: KEY }).webhooks.secretsKey).toEqual({
        kind: 'keys',
        keys: [KEY],
      });
    });

    it.each([
      ['not base64', 'not a key'],
      ['16 bytes', Buffer.alloc(16, 1).toString('base64')],
      ['33 bytes', Buffer.alloc(33, 1).toString('base64')],
      ['hex', 'ab'.repeat(32)],
      ['a good key and a bad one', `${KEY},nope`],
    ])('should refuse %s without echoing it', (_name, value) => {
      let message = '';
      try {
        loadConfig({ ...base, WEBHOOK_SECRETS_KEY: value });
      } catch (error) {
        message = (error as Error).message;
      }
      expect(message).toBe(
        'Invalid configuration: WEBHOOK_SECRETS_KEY must be the base64 of 32 random bytes (openssl rand -base64 32), comma-separated to rotate',
      );
    });
  });

  it.each([
    [{ WEBHOOK_URLS: 'ftp://files.example/x' }, 'each of WEBHOOK_URLS must be an absolute http(s) URL'],
    [{ WEBHOOK_URLS: '/relative/path' }, 'each of WEBHOOK_URLS must be an absolute http(s) URL'],
    [{ WEBHOOK_URLS: 'https://ok.example, nope' }, 'each of WEBHOOK_URLS must be an absolute http(s) URL'],
    [
      { WEBHOOK_URLS: 'https://ok.example, https://user:hunter2@hooks.example/x' },
      'each of WEBHOOK_URLS must not hold credentials (user:password@); receivers verify the signature instead',
    ],
    [
      { WEBHOOK_URLS: 'https://token@hooks.example/x' },
      'each of WEBHOOK_URLS must not hold credentials (user:password@); receivers verify the signature instead',
    ],
    [{ WEBHOOK_SECRET: undefined }, 'WEBHOOK_SECRET is required when WEBHOOK_URLS is set'],
    [
      { WEBHOOK_SECRET: 'hunter2' },
      'WEBHOOK_SECRET must be whsec_ followed by the base64 of 24 to 64 bytes (comma-separated for several)',
    ],
    [
      { WEBHOOK_SECRET: `whsec_${Buffer.alloc(16).toString('base64')}` },
      'WEBHOOK_SECRET must be whsec_ followed by the base64 of 24 to 64 bytes (comma-separated for several)',
    ],
    [
      { WEBHOOK_SECRET: `whsec_${Buffer.alloc(65).toString('base64')}` },
      'WEBHOOK_SECRET must be whsec_ followed by the base64 of 24 to 64 bytes (comma-separated for several)',
    ],
    [
      { WEBHOOK_RETRY_SCHEDULE: '5s,soon' },
      'WEBHOOK_RETRY_SCHEDULE must be comma-separated durations such as 5s,5m,2h (units ms, s, m, h, d)',
    ],
    [
      { WEBHOOK_RETRY_SCHEDULE: '0s' },
      'WEBHOOK_RETRY_SCHEDULE must be comma-separated durations such as 5s,5m,2h (units ms, s, m, h, d)',
    ],
    [
      { WEBHOOK_RETRY_SCHEDULE: '1.5s' },
      'WEBHOOK_RETRY_SCHEDULE must be comma-separated durations such as 5s,5m,2h (units ms, s, m, h, d)',
    ],
    [{ WEBHOOK_RETENTION: '1d,2d' }, 'WEBHOOK_RETENTION must be one duration, such as 5d'],
    [{ WEBHOOK_URLS: 'https://hooks.example/x#frag' }, 'each of WEBHOOK_URLS must not have a fragment (#…)'],
    [
      { WEBHOOK_URLS: `https://hooks.example/${'x'.repeat(2048)}` },
      'each of WEBHOOK_URLS must be at most 2048 characters',
    ],
    [
      { WEBHOOK_BLOCKED_NETWORKS: '10.0.0.0/33' },
      'WEBHOOK_BLOCKED_NETWORKS must be comma-separated CIDR ranges such as 192.0.2.0/24,2001:db8::/32',
    ],
    [
      { WEBHOOK_ALLOWED_NETWORKS: '10.20.0.0' },
      'WEBHOOK_ALLOWED_NETWORKS must be comma-separated CIDR ranges such as 10.20.0.0/16,fd00:20::/48',
    ],
    [
      { WEBHOOK_ALLOWED_NETWORKS: '127.0.0.0/8,::1/129' },
      'WEBHOOK_ALLOWED_NETWORKS must be comma-separated CIDR ranges such as 10.20.0.0/16,fd00:20::/48',
    ],
    [
      { WEBHOOK_ALLOWED_NETWORKS: 'internal.example/24' },
      'WEBHOOK_ALLOWED_NETWORKS must be comma-separated CIDR ranges such as 10.20.0.0/16,fd00:20::/48',
    ],
    [{ WEBHOOK_URLS: 'http://[fe80::1%25eth0]/x' }, 'each of WEBHOOK_URLS must be an absolute http(s) URL'],
    [
      { WEBHOOK_DISABLE_AFTER: 'never' },
      'WEBHOOK_DISABLE_AFTER must be comma-separated durations such as 5s,5m,2h (units ms, s, m, h, d)',
    ],
    [{ WEBHOOK_TIMEOUT_MS: '10' }, 'WEBHOOK_TIMEOUT_MS must be an integer between 100 and 600000'],
    [{ WEBHOOK_CONCURRENCY: '0' }, 'WEBHOOK_CONCURRENCY must be an integer between 1 and 1000'],
    [{ WEBHOOK_MAX_ENDPOINTS: '0' }, 'WEBHOOK_MAX_ENDPOINTS must be an integer between 1 and 10000'],
    [{ WEBHOOK_MAX_ENDPOINTS: 'many' }, 'WEBHOOK_MAX_ENDPOINTS must be an integer between 1 and 10000'],
  ])('should refuse %j with one line naming the variable', (env, message) => {
    expect(() => loadConfig({ ...base, ...env })).toThrow(new ConfigError(`Invalid configuration: ${message}`));
  });

  describe('when WEBHOOK_URLS names a blocked address', () => {
    const refused = (what: string) =>
      new ConfigError(
        `Invalid configuration: each of WEBHOOK_URLS must not point to ${what}; ` +
          'open its range with WEBHOOK_ALLOWED_NETWORKS (CIDR ranges, comma-separated)',
      );

    it.each([
      'http://127.0.0.1:9000/hook',
      'http://2130706433/hook',
      'http://0x7f.1/hook',
      'http://0177.0.0.1/hook',
      'http://127.1/hook',
      'http://10.1.2.3/hook',
      'http://169.254.169.254/latest',
      'http://[::1]:9000/hook',
      'http://[::ffff:127.0.0.1]/hook',
      'http://[64:ff9b::7f00:1]/hook',
      'http://[2002:7f00:1::]/hook',
      'http://[2001::1]/hook',
      'http://[fd00:ec2::254]/hook',
    ])('should stop start-up for %s with one line naming both variables', (url) => {
      expect(() => loadConfig({ ...base, WEBHOOK_URLS: `https://hooks.example/ok,${url}` })).toThrow(
        refused('a private or special-purpose address'),
      );
    });

    it('should never echo the URL (its path or query may hold a credential)', () => {
      const url = 'http://10.1.2.3/hooks?token=hunter2';
      expect(() => loadConfig({ ...base, WEBHOOK_URLS: url })).toThrow(ConfigError);
      try {
        loadConfig({ ...base, WEBHOOK_URLS: url });
      } catch (error) {
        expect((error as Error).message).not.toMatch(/10\.1\.2\.3|hunter2/);
      }
    });

    it('should start when WEBHOOK_ALLOWED_NETWORKS opens its range', () => {
      const env = { ...base, WEBHOOK_URLS: 'http://127.0.0.1:9000/a,http://[::1]:9000/b,http://10.20.1.2/c' };
      expect(
        loadConfig({ ...env, WEBHOOK_ALLOWED_NETWORKS: '127.0.0.0/8,::1/128,10.20.0.0/16' }).webhooks.configured.urls,
      ).toEqual(['http://127.0.0.1:9000/a', 'http://[::1]:9000/b', 'http://10.20.1.2/c']);
      expect(() => loadConfig({ ...env, WEBHOOK_ALLOWED_NETWORKS: '127.0.0.0/8,::1/128' })).toThrow(
        refused('a private or special-purpose address'),
      );
    });

    it('should block WEBHOOK_BLOCKED_NETWORKS besides the special-purpose ranges, which it never reopens', () => {
      const env = { ...base, WEBHOOK_BLOCKED_NETWORKS: '10.0.0.0/8,8.8.8.0/24' };
      for (const url of ['http://127.0.0.1:9000/a', 'http://169.254.169.254/latest', 'http://10.0.0.1/a']) {
        expect(() => loadConfig({ ...env, WEBHOOK_URLS: url })).toThrow(
          refused('a private or special-purpose address'),
        );
      }
      expect(() => loadConfig({ ...env, WEBHOOK_URLS: 'http://8.8.8.8/a' })).toThrow(
        refused('an address in WEBHOOK_BLOCKED_NETWORKS'),
      );
      expect(loadConfig({ ...env, WEBHOOK_URLS: 'http://8.8.4.4/a' }).webhooks.configured.urls).toEqual([
        'http://8.8.4.4/a',
      ]);
      // Only WEBHOOK_ALLOWED_NETWORKS opens a range, special-purpose or added.
      const opened = { ...env, WEBHOOK_ALLOWED_NETWORKS: '127.0.0.0/8,8.8.8.8/32' };
      expect(
        loadConfig({ ...opened, WEBHOOK_URLS: 'http://127.0.0.1:9000/a,http://8.8.8.8/b' }).webhooks.configured.urls,
      ).toEqual(['http://127.0.0.1:9000/a', 'http://8.8.8.8/b']);
    });

    it('should leave a name to be checked when it is saved and when a send connects', () => {
      expect(loadConfig({ ...base, WEBHOOK_URLS: 'http://localhost:9000/a' }).webhooks.configured.urls).toEqual([
        'http://localhost:9000/a',
      ]);
    });
  });

  describe('plain http in production', () => {
    const production = { ...base, AUTH_TOKENS: 'a'.repeat(32), NODE_ENV: 'production' };
    const refused = new ConfigError(
      'Invalid configuration: each of WEBHOOK_URLS must be https when NODE_ENV=production ' +
        '(plain http only to an IP address inside WEBHOOK_ALLOWED_NETWORKS)',
    );

    it.each([
      ['http://hooks.example/plants?token=hunter2', ''],
      ['http://8.8.8.8/plants', ''],
      ['http://10.21.0.7/plants', '10.20.0.0/16'],
      ['http://localhost:9000/plants', '127.0.0.0/8'],
    ])('should stop start-up for %s (allowed: %j) with one line naming WEBHOOK_URLS and the rule', (url, allowed) => {
      const env = { ...production, WEBHOOK_URLS: `https://hooks.example/ok,${url}`, WEBHOOK_ALLOWED_NETWORKS: allowed };
      expect(() => loadConfig(env)).toThrow(refused);
    });

    it('should start with https, or http to an IP address inside WEBHOOK_ALLOWED_NETWORKS, and say so to the sender', () => {
      const config = loadConfig({
        ...production,
        WEBHOOK_URLS: 'https://hooks.example/a,http://10.20.0.7:9000/b,http://[fd00:20::7]/c',
        WEBHOOK_ALLOWED_NETWORKS: '10.20.0.0/16,fd00:20::/48',
      }).webhooks;
      expect(config.configured.urls).toEqual([
        'https://hooks.example/a',
        'http://10.20.0.7:9000/b',
        'http://[fd00:20::7]/c',
      ]);
      expect(config.httpsOnly).toBe(true);
    });

    it('should allow plain http outside production', () => {
      const config = loadConfig({ ...base, WEBHOOK_URLS: 'http://hooks.example/plants' }).webhooks;
      expect([config.configured.urls, config.httpsOnly]).toEqual([['http://hooks.example/plants'], false]);
    });
  });

  it('should never echo a secret in its message', () => {
    const secret = `whsec_${Buffer.alloc(8, 1).toString('base64')}`;
    expect(() => loadConfig({ ...base, WEBHOOK_SECRET: secret })).toThrow(ConfigError);
    try {
      loadConfig({ ...base, WEBHOOK_SECRET: secret });
    } catch (error) {
      expect((error as Error).message).not.toContain(secret.slice(6));
    }
  });
});
