import { ConfigError } from './config.error';
import { loadConfig } from './load-config';

const SECRET = `whsec_${Buffer.alloc(32, 7).toString('base64')}`;
const OTHER = `whsec_${Buffer.alloc(24, 9).toString('base64')}`;
const base = { AUTH_TOKENS: 'token', WEBHOOK_URLS: 'https://hooks.example/plants', WEBHOOK_SECRET: SECRET };

describe('webhook configuration', () => {
  it('should leave the webhook off when WEBHOOK_URLS is unset or empty, whatever else is set', () => {
    expect(loadConfig({ AUTH_TOKENS: 'token', WEBHOOK_SECRET: 'not even valid' }).webhooks).toBeUndefined();
    expect(loadConfig({ AUTH_TOKENS: 'token', WEBHOOK_URLS: '' }).webhooks).toBeUndefined();
  });

  it('should default to the Standard Webhooks schedule, a 15 s timeout and 7 days of retention', () => {
    expect(loadConfig(base).webhooks).toEqual({
      urls: ['https://hooks.example/plants'],
      secrets: [SECRET],
      timeoutMs: 15000,
      retryScheduleMs: [5, 300, 1800, 7200, 18000, 36000, 50400, 72000, 86400].map((s) => s * 1000),
      retentionMs: 7 * 86_400_000,
      concurrency: 16,
      pollIntervalMs: 1000,
    });
  });

  it('should read several URLs and secrets, and a schedule in every unit', () => {
    const config = loadConfig({
      ...base,
      WEBHOOK_URLS: 'http://127.0.0.1:9000/a, https://b.example/hook?token=x',
      WEBHOOK_SECRET: `${SECRET},${OTHER}`,
      WEBHOOK_TIMEOUT_MS: '2500',
      WEBHOOK_RETRY_SCHEDULE: '500ms,1s,2m,3h,1d',
      WEBHOOK_RETENTION: '36h',
      WEBHOOK_CONCURRENCY: '4',
      WEBHOOK_POLL_INTERVAL_MS: '250',
    }).webhooks;
    expect(config).toEqual({
      urls: ['http://127.0.0.1:9000/a', 'https://b.example/hook?token=x'],
      secrets: [SECRET, OTHER],
      timeoutMs: 2500,
      retryScheduleMs: [500, 1000, 120_000, 10_800_000, 86_400_000],
      retentionMs: 36 * 3_600_000,
      concurrency: 4,
      pollIntervalMs: 250,
    });
  });

  it.each([
    [{ WEBHOOK_URLS: 'ftp://files.example/x' }, 'WEBHOOK_URLS must be a comma-separated list of absolute http(s) URLs'],
    [{ WEBHOOK_URLS: '/relative/path' }, 'WEBHOOK_URLS must be a comma-separated list of absolute http(s) URLs'],
    [
      { WEBHOOK_URLS: 'https://ok.example, nope' },
      'WEBHOOK_URLS must be a comma-separated list of absolute http(s) URLs',
    ],
    [
      { WEBHOOK_URLS: 'https://ok.example, https://user:hunter2@hooks.example/x' },
      'WEBHOOK_URLS must not hold credentials (user:password@); receivers verify the signature instead',
    ],
    [
      { WEBHOOK_URLS: 'https://token@hooks.example/x' },
      'WEBHOOK_URLS must not hold credentials (user:password@); receivers verify the signature instead',
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
    [{ WEBHOOK_RETENTION: '1d,2d' }, 'WEBHOOK_RETENTION must be one duration'],
    [{ WEBHOOK_TIMEOUT_MS: '10' }, 'WEBHOOK_TIMEOUT_MS must be an integer between 100 and 600000'],
    [{ WEBHOOK_CONCURRENCY: '0' }, 'WEBHOOK_CONCURRENCY must be an integer between 1 and 1000'],
  ])('should refuse %j with one line naming the variable', (env, message) => {
    expect(() => loadConfig({ ...base, ...env })).toThrow(new ConfigError(`Invalid configuration: ${message}`));
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
