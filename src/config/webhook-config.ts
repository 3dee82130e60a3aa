import { WebhookConfig } from './app-config';
import { ConfigError } from './config.error';
import { EnvironmentVariables } from './environment-variables';
import { commaList } from './comma-list';

/** The Standard Webhooks schedule: 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 14 h, 20 h, 24 h. */
export const DEFAULT_RETRY_SCHEDULE = '5s,5m,30m,2h,5h,10h,14h,20h,24h';
export const DEFAULT_RETENTION = '7d';
const UNITS_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };
const DURATION = /^([0-9]{1,9})(ms|s|m|h|d)$/;
// `whsec_` and the base64 of 24 to 64 random bytes (Standard Webhooks).
const SECRET = /^whsec_([A-Za-z0-9+/]+={0,2})$/;

/** The webhook settings, or undefined when WEBHOOK_URLS is unset. Messages name the variable, never its value. */
export function webhookConfig(vars: EnvironmentVariables): WebhookConfig | undefined {
  const urls = commaList(vars.WEBHOOK_URLS);
  if (urls.length === 0) return undefined;
  if (!urls.every(isHttpUrl)) {
    throw new ConfigError(
      'Invalid configuration: WEBHOOK_URLS must be a comma-separated list of absolute http(s) URLs',
    );
  }
  // fetch refuses a URL with credentials in it: every send would fail.
  if (urls.some(hasCredentials)) {
    throw new ConfigError(
      'Invalid configuration: WEBHOOK_URLS must not hold credentials (user:password@); receivers verify the signature instead',
    );
  }
  const secrets = commaList(vars.WEBHOOK_SECRET);
  if (secrets.length === 0) {
    throw new ConfigError('Invalid configuration: WEBHOOK_SECRET is required when WEBHOOK_URLS is set');
  }
  if (!secrets.every(isSecret)) {
    throw new ConfigError(
      'Invalid configuration: WEBHOOK_SECRET must be whsec_ followed by the base64 of 24 to 64 bytes (comma-separated for several)',
    );
  }
  const retryScheduleMs = durations('WEBHOOK_RETRY_SCHEDULE', vars.WEBHOOK_RETRY_SCHEDULE ?? DEFAULT_RETRY_SCHEDULE);
  const retention = durations('WEBHOOK_RETENTION', vars.WEBHOOK_RETENTION ?? DEFAULT_RETENTION);
  if (retention.length !== 1) throw new ConfigError('Invalid configuration: WEBHOOK_RETENTION must be one duration');
  return {
    urls,
    secrets,
    timeoutMs: vars.WEBHOOK_TIMEOUT_MS ?? 15000,
    retryScheduleMs,
    retentionMs: retention[0],
    concurrency: vars.WEBHOOK_CONCURRENCY ?? 16,
    pollIntervalMs: vars.WEBHOOK_POLL_INTERVAL_MS ?? 1000,
  };
}

function isHttpUrl(value: string): boolean {
  try {
    const url = new URL(value);
    return (url.protocol === 'http:' || url.protocol === 'https:') && url.hostname !== '';
  } catch {
    return false;
  }
}

function hasCredentials(value: string): boolean {
  const url = new URL(value);
  return url.username !== '' || url.password !== '';
}

function isSecret(value: string): boolean {
  const base64 = SECRET.exec(value)?.[1];
  if (base64 === undefined || base64.length % 4 !== 0) return false;
  const bytes = Buffer.from(base64, 'base64').length;
  return bytes >= 24 && bytes <= 64;
}

/** `1s,2s,500ms` in milliseconds; each a positive whole number with a unit (ms, s, m, h, d). */
function durations(name: string, value: string): number[] {
  const parts = commaList(value);
  const parsed = parts
    .map((part) => DURATION.exec(part))
    .map((match) => match && Number(match[1]) * UNITS_MS[match[2]]);
  if (parts.length === 0 || parsed.some((ms) => ms === null || ms <= 0)) {
    throw new ConfigError(
      `Invalid configuration: ${name} must be comma-separated durations such as 5s,5m,2h (units ms, s, m, h, d)`,
    );
  }
  return parsed as number[];
}
