import { resolve } from 'node:path';
import { ConfigError } from './config.error';
import { loadConfig } from './load-config';

const KEY = Buffer.alloc(32, 1).toString('base64');
describe('loadConfig', () => {
  describe('when nothing is set', () => {
    it('should use the documented defaults', () => {
      expect(loadConfig({})).toEqual({
        port: 3000,
        host: '127.0.0.1',
        database: { kind: 'sqlite', path: resolve('data/plants.db') },
        authTokens: [],
        adminTokens: [],
        authFailuresPerMinute: 600,
        jwt: undefined,
        production: false,
        bodyLimit: 1048576,
        dataDir: resolve('data'),
        log: { level: 'info', format: 'pretty', requests: 'all', slowMs: 1000 },
        metrics: { public: false, port: undefined, tokens: [] },
        corsOrigins: [],
        rateLimit: undefined,
        redisUrl: undefined,
        trustProxy: false,
        validationPipe: 'compiled',
        webhooks: expect.objectContaining({ configured: { urls: [], secrets: [] } }),
        timeouts: { shutdownMs: 10000, keepAliveMs: 75000, requestMs: 30000 },
      });
    });

    it('should listen on the loopback interface only outside production, and on every interface in production', () => {
      expect(loadConfig({}).host).toBe('127.0.0.1');
      expect(loadConfig({ NODE_ENV: 'development' }).host).toBe('127.0.0.1');
      expect(loadConfig({ NODE_ENV: 'production', AUTH_TOKENS: '1'.repeat(32) }).host).toBe('0.0.0.0');
      expect(loadConfig({ NODE_ENV: 'production', AUTH_TOKENS: '1'.repeat(32), HOST: '' }).host).toBe('0.0.0.0');
      expect(loadConfig({ HOST: '0.0.0.0' }).host).toBe('0.0.0.0');
    });

    it('should treat empty variables as unset', () => {
      expect(loadConfig({ PORT: '', DATABASE_URL: '', AUTH_TOKENS: '' }).port).toBe(3000);
    });
  });

  describe('when values are valid', () => {
    it('should parse every variable', () => {
      const config = loadConfig({
        PORT: '8080',
        HOST: '127.0.0.1',
        DATABASE_URL: 'postgresql://plants@db:5432/plants',
        AUTH_TOKENS: ` ${'1'.repeat(32)} , ${'2'.repeat(40)},, ${'3'.repeat(35)}= `,
        AUTH_FAILURES_PER_MINUTE: '30',
        ADMIN_TOKENS: `${'a'.repeat(32)}, ${'b'.repeat(33)}`,
        AUTH_JWKS_URL: 'https://idp.example.com/.well-known/jwks.json',
        AUTH_JWT_ISSUER: 'https://idp.example.com/',
        AUTH_JWT_AUDIENCE: 'plant-store',
        NODE_ENV: 'production',
        BODY_LIMIT: '4096',
        DATA_DIR: '/tmp/plants',
        DATABASE_POOL_MAX: '25',
        DATABASE_CONNECT_ATTEMPTS: '3',
        DATABASE_QUERY_TIMEOUT_MS: '2500',
        DATABASE_PREPARED_STATEMENTS: 'false',
        LOG_LEVEL: 'debug',
        LOG_REQUESTS: 'failures',
        LOG_SLOW_MS: '250',
        METRICS_PUBLIC: 'true',
        METRICS_PORT: '9100',
        METRICS_TOKENS: `${'m'.repeat(32)}, ${'n'.repeat(64)}`,
        CORS_ORIGINS: 'https://a.example, https://b.example',
        RATE_LIMIT_PER_MINUTE: '600',
        REDIS_URL: 'redis://cache:6379/2',
        TRUST_PROXY: '10.0.0.0/8, 192.168.1.7, ::1, loopback',
        VALIDATION_PIPE: 'stock',
        SHUTDOWN_TIMEOUT_MS: '3500',
        KEEP_ALIVE_TIMEOUT_MS: '65000',
        REQUEST_TIMEOUT_MS: '10000',
        WEBHOOK_SECRETS_KEY: KEY,
      });
      expect(config).toEqual({
        port: 8080,
        host: '127.0.0.1',
        database: {
          kind: 'postgres',
          url: 'postgresql://plants@db:5432/plants',
          poolMax: 25,
          connectAttempts: 3,
          queryTimeoutMs: 2500,
          preparedStatements: false,
        },
        authTokens: ['1'.repeat(32), '2'.repeat(40), `${'3'.repeat(35)}=`],
        adminTokens: ['a'.repeat(32), 'b'.repeat(33)],
        authFailuresPerMinute: 30,
        jwt: {
          jwksUrl: 'https://idp.example.com/.well-known/jwks.json',
          publicKey: undefined,
          issuer: 'https://idp.example.com/',
          audience: 'plant-store',
        },
        production: true,
        bodyLimit: 4096,
        dataDir: '/tmp/plants',
        log: { level: 'debug', format: 'json', requests: 'failures', slowMs: 250 },
        metrics: { public: true, port: 9100, tokens: ['m'.repeat(32), 'n'.repeat(64)] },
        corsOrigins: ['https://a.example', 'https://b.example'],
        rateLimit: { perMinute: 600 },
        redisUrl: 'redis://cache:6379/2',
        trustProxy: ['10.0.0.0/8', '192.168.1.7', '::1', 'loopback'],
        validationPipe: 'stock',
        webhooks: expect.objectContaining({ configured: { urls: [], secrets: [] } }),
        timeouts: { shutdownMs: 3500, keepAliveMs: 65000, requestMs: 10000 },
      });
    });

    it('should take VALIDATION_PIPE as compiled or stock', () => {
      expect(loadConfig({ VALIDATION_PIPE: 'compiled' }).validationPipe).toBe('compiled');
      expect(loadConfig({ VALIDATION_PIPE: 'stock' }).validationPipe).toBe('stock');
    });

    it('should take TRUST_PROXY as a hop count, or false', () => {
      expect(loadConfig({ TRUST_PROXY: '2' }).trustProxy).toBe(2);
      expect(loadConfig({ TRUST_PROXY: 'false' }).trustProxy).toBe(false);
    });

    it('should accept JWTs alone in production', () => {
      const config = loadConfig({
        NODE_ENV: 'production',
        WEBHOOK_SECRETS_KEY: KEY,
        AUTH_JWT_PUBLIC_KEY: '-----BEGIN PUBLIC KEY-----\nMCowBQYDK2VwAyEA\n-----END PUBLIC KEY-----',
        AUTH_JWT_ISSUER: 'issuer',
        AUTH_JWT_AUDIENCE: 'audience',
      });
      expect(config.authTokens).toEqual([]);
      expect(config.jwt?.issuer).toBe('issuer');
    });

    it('should default the PostgreSQL pool to 10 connections, 10 start-up attempts and a 5 s query timeout', () => {
      expect(loadConfig({ DATABASE_URL: 'postgres://db/plants' }).database).toEqual({
        kind: 'postgres',
        url: 'postgres://db/plants',
        poolMax: 10,
        connectAttempts: 10,
        queryTimeoutMs: 5000,
        preparedStatements: true,
      });
    });

    it('should resolve a relative sqlite path', () => {
      expect(loadConfig({ DATABASE_URL: 'sqlite:./x/y.db' }).database).toEqual({
        kind: 'sqlite',
        path: resolve('x/y.db'),
      });
    });
  });

  describe('when a value is bad', () => {
    it.each([
      [{ PORT: 'abc' }, 'Invalid configuration: PORT must be an integer between 0 and 65535'],
      [{ PORT: '70000' }, 'Invalid configuration: PORT must be an integer between 0 and 65535'],
      [{ PORT: '80.5' }, 'Invalid configuration: PORT must be an integer between 0 and 65535'],
      [{ BODY_LIMIT: '10' }, 'Invalid configuration: BODY_LIMIT must be an integer between 1024 and 104857600'],
      [{ DATABASE_POOL_MAX: '0' }, 'Invalid configuration: DATABASE_POOL_MAX must be an integer between 1 and 1000'],
      [
        { DATABASE_CONNECT_ATTEMPTS: 'many' },
        'Invalid configuration: DATABASE_CONNECT_ATTEMPTS must be an integer between 1 and 100',
      ],
      [
        { DATABASE_QUERY_TIMEOUT_MS: '50' },
        'Invalid configuration: DATABASE_QUERY_TIMEOUT_MS must be an integer between 100 and 600000',
      ],
      [
        { DATABASE_PREPARED_STATEMENTS: 'no' },
        'Invalid configuration: DATABASE_PREPARED_STATEMENTS must be true or false',
      ],
      [
        { AUTH_JWKS_URL: 'https://idp/jwks' },
        'Invalid configuration: AUTH_JWT_ISSUER and AUTH_JWT_AUDIENCE are required with JWT bearer tokens',
      ],
      [{ AUTH_JWKS_URL: 'not a url' }, 'Invalid configuration: AUTH_JWKS_URL must be an http(s) URL'],
      [{ LOG_FORMAT: 'xml' }, 'Invalid configuration: LOG_FORMAT must be json or pretty'],
      [{ LOG_REQUESTS: 'errors' }, 'Invalid configuration: LOG_REQUESTS must be all, failures or off'],
      [{ LOG_SLOW_MS: '-1' }, 'Invalid configuration: LOG_SLOW_MS must be an integer between 0 and 3600000'],
      [{ LOG_SLOW_MS: '1s' }, 'Invalid configuration: LOG_SLOW_MS must be an integer between 0 and 3600000'],
      [{ VALIDATION_PIPE: 'fast' }, 'Invalid configuration: VALIDATION_PIPE must be compiled or stock'],
      [{ VALIDATION_PIPE: 'Stock' }, 'Invalid configuration: VALIDATION_PIPE must be compiled or stock'],
      [
        { RATE_LIMIT_PER_MINUTE: '0' },
        'Invalid configuration: RATE_LIMIT_PER_MINUTE must be an integer between 1 and 1000000',
      ],
      [{ REDIS_URL: 'localhost:6379' }, 'Invalid configuration: REDIS_URL must be redis://… or rediss://…'],
      [
        {
          WEBHOOK_URLS: 'https://receiver.example/hooks',
          WEBHOOK_SECRET: Array.from({ length: 17 }, () => `whsec_${Buffer.alloc(24).toString('base64')}`).join(','),
        },
        'Invalid configuration: WEBHOOK_SECRET must list at most 16 secrets',
      ],
      ...['true', '0', '101', '10.0.0.0/33', 'proxy.example', '10.0.0.1/8/1'].map(
        (value): [NodeJS.ProcessEnv, string] => [
          { TRUST_PROXY: value },
          'Invalid configuration: TRUST_PROXY must be false, a hop count between 1 and 100, or a comma-separated list of proxy addresses or CIDR ranges',
        ],
      ),
      [{ NODE_ENV: 'prod' }, 'Invalid configuration: NODE_ENV must be production, development or test'],
      [
        { AUTH_TOKENS: 'has space' },
        'Invalid configuration: AUTH_TOKENS must be a comma-separated list of bearer tokens (letters, digits and -._~+/=)',
      ],
      [
        { METRICS_TOKENS: 'scrape:me' },
        'Invalid configuration: METRICS_TOKENS must be a comma-separated list of bearer tokens (letters, digits and -._~+/=)',
      ],
      [
        { NODE_ENV: 'production', AUTH_TOKENS: 'a'.repeat(32), METRICS_TOKENS: `${'m'.repeat(32)},prometheus` },
        'Invalid configuration: each of METRICS_TOKENS must be at least 32 characters when NODE_ENV=production (make one with: openssl rand -hex 32)',
      ],
      [
        { DATABASE_URL: 'mysql://root:hunter2@db/plants' },
        'Invalid configuration: DATABASE_URL must be postgres://…, postgresql://… or sqlite:<path>',
      ],
      [
        { NODE_ENV: 'production' },
        'Invalid configuration: AUTH_TOKENS (or AUTH_JWKS_URL / AUTH_JWT_PUBLIC_KEY) must be set when NODE_ENV=production',
      ],
      [
        { NODE_ENV: 'production', AUTH_TOKENS: `${'a'.repeat(32)},change-me` },
        'Invalid configuration: each of AUTH_TOKENS must be at least 32 characters when NODE_ENV=production (make one with: openssl rand -hex 32)',
      ],
      [
        {
          NODE_ENV: 'production',
          AUTH_JWKS_URL: 'http://idp.example.com/jwks.json',
          AUTH_JWT_ISSUER: 'i',
          AUTH_JWT_AUDIENCE: 'a',
        },
        'Invalid configuration: AUTH_JWKS_URL must be https when NODE_ENV=production',
      ],
      [
        { DATABASE_URL: 'postgres://db/plants', DATABASE_QUERY_TIMEOUT_MS: '15000' },
        'Invalid configuration: SHUTDOWN_TIMEOUT_MS (10000) must be at least DATABASE_QUERY_TIMEOUT_MS (15000) + 1000: a request in flight at SIGTERM may wait that long on PostgreSQL',
      ],
      [
        { SHUTDOWN_TIMEOUT_MS: '500' },
        'Invalid configuration: SHUTDOWN_TIMEOUT_MS must be an integer between 2000 and 600000',
      ],
      [
        { AUTH_FAILURES_PER_MINUTE: '0' },
        'Invalid configuration: AUTH_FAILURES_PER_MINUTE must be an integer between 1 and 1000000',
      ],
    ])('should refuse %j with one line naming the variable', (env, message) => {
      expect(() => loadConfig(env)).toThrow(new ConfigError(message));
    });

    it('should name every bad variable at once, and never echo a value', () => {
      let message = '';
      try {
        loadConfig({ PORT: 'x', DATABASE_URL: 'mysql://root:hunter2@db' });
      } catch (error) {
        message = (error as Error).message;
      }
      expect(message).toBe(
        'Invalid configuration: PORT must be an integer between 0 and 65535; DATABASE_URL must be postgres://…, postgresql://… or sqlite:<path>',
      );
      expect(message).not.toContain('hunter2');
    });
  });
});
