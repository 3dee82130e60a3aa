import { loadConfig } from '../config/load-config';
import { Database } from '../database/database';
import { startupSummary } from './startup-summary';

const database = (kind: 'sqlite' | 'postgres', location: string) =>
  ({
    kind,
    location,
    migrations: [
      { name: 'plants/2026-11-20-01-create-plants', sqlite: '', postgres: '' },
      { name: 'webhooks/2026-11-23-01-create-webhook-deliveries', sqlite: '', postgres: '' },
    ],
  }) as Partial<Database> as Database;

describe('startupSummary', () => {
  it('should say what runs, where, and which parts are on, with hosts only', () => {
    const config = loadConfig({
      AUTH_TOKENS: 'first-secret-token,second-secret-token',
      AUTH_JWKS_URL: 'https://idp.example/tenant/keys?secret=k',
      AUTH_JWT_ISSUER: 'https://idp.example/',
      AUTH_JWT_AUDIENCE: 'plant-store',
      RATE_LIMIT_PER_MINUTE: '600',
      REDIS_URL: 'redis://:redis-password@cache.internal:6380/2',
      WEBHOOK_URLS: 'https://hooks.example/secret-path?token=abc,http://10.0.0.7:8080/in',
      WEBHOOK_SECRET: `whsec_${Buffer.alloc(32, 7).toString('base64')}`,
      WEBHOOK_ALLOWED_NETWORKS: '10.0.0.0/8',
      VALIDATION_PIPE: 'stock',
      LOG_REQUESTS: 'failures',
      LOG_SLOW_MS: '500',
    });
    const line = startupSummary(config, {
      database: database('postgres', 'db.internal:5432/plants'),
      address: { address: '0.0.0.0', family: 'IPv4', port: 3000 },
      developmentToken: false,
    });
    expect(line).toBe(
      `Plant Store 1.0.0 on Node ${process.version}; store: PostgreSQL db.internal:5432/plants; ` +
        'migrations: plants/2026-11-20-01-create-plants, webhooks/2026-11-23-01-create-webhook-deliveries; listening on http://0.0.0.0:3000; ' +
        'auth: 2 static token(s) and JWTs (keys from idp.example); ' +
        'rate limit: 600/min per principal; failed authentications: at most 600/min per client address; ' +
        'counters: in Redis at cache.internal:6380; ' +
        'webhooks: WEBHOOK_URLS to hooks.example, 10.0.0.7:8080; endpoints managed at /webhooks/endpoints (0 admin token(s), or a JWT with scope webhooks:manage); ' +
        "validation: Nest's ValidationPipe (VALIDATION_PIPE=stock); " +
        'request log: 4xx, 5xx and requests slower than 500 ms (LOG_REQUESTS=failures)',
    );
    for (const secret of ['secret', 'password', 'token=', 'whsec_']) expect(line).not.toContain(secret);
  });

  it('should name the development token, the SQLite file, an IPv6 address and what is off', () => {
    const line = startupSummary(loadConfig({}), {
      database: database('sqlite', 'file /data/plants.db'),
      address: { address: '::', family: 'IPv6', port: 8080 },
      developmentToken: true,
    });
    expect(line).toContain('store: SQLite file /data/plants.db');
    expect(line).toContain('listening on http://[::]:8080');
    expect(line).toContain(
      'auth: the development token; rate limit: off; failed authentications: at most 600/min per client address; ' +
        'counters: in this instance; webhooks: endpoints managed at /webhooks/endpoints (0 admin token(s)); ' +
        'validation: compiled rules; request log: every request',
    );
  });

  it('should say when the request log is off', () => {
    const line = startupSummary(loadConfig({ LOG_REQUESTS: 'off' }), {
      database: database('sqlite', 'file /data/plants.db'),
      address: null,
      developmentToken: true,
    });
    expect(line).toMatch(/; request log: off \(LOG_REQUESTS=off\)$/);
  });
});
