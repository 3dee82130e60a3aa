import { isIP } from 'node:net';
import { BlockedNetworks, SPECIAL_PURPOSE } from '../webhooks/blocked-networks';
import { WebhookConfig } from './app-config';
import { ConfigError } from './config.error';
import { EnvironmentVariables } from './environment-variables';
import { commaList } from './comma-list';

/** The Standard Webhooks schedule: 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 14 h, 20 h, 24 h. */
export const DEFAULT_RETRY_SCHEDULE = '5s,5m,30m,2h,5h,10h,14h,20h,24h';
export const DEFAULT_RETENTION = '7d';
export const DEFAULT_SECRET_OVERLAP = '24h';
export const DEFAULT_DISABLE_AFTER = '5d';
const UNITS_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };
const DURATION = /^([0-9]{1,9})(ms|s|m|h|d)$/;
// `whsec_` and the base64 of 24 to 64 random bytes (Standard Webhooks).
const SECRET = /^whsec_([A-Za-z0-9+/]+={0,2})$/;

/** The webhook settings. Messages name the variable, never its value. */
export function webhookConfig(vars: EnvironmentVariables): WebhookConfig {
  const urls = commaList(vars.WEBHOOK_URLS);
  const invalid = urls.map(endpointUrlProblem).find((problem) => problem !== undefined);
  if (invalid !== undefined) throw new ConfigError(`Invalid configuration: each of WEBHOOK_URLS ${invalid}`);
  const secrets = commaList(vars.WEBHOOK_SECRET);
  if (urls.length > 0 && secrets.length === 0) {
    throw new ConfigError('Invalid configuration: WEBHOOK_SECRET is required when WEBHOOK_URLS is set');
  }
  if (!secrets.every(isSecret)) {
    throw new ConfigError(
      'Invalid configuration: WEBHOOK_SECRET must be whsec_ followed by the base64 of 24 to 64 bytes (comma-separated for several)',
    );
  }
  // Unset: every special-purpose range (see BlockedNetworks).
  const blockedNetworks =
    vars.WEBHOOK_BLOCKED_NETWORKS === undefined
      ? SPECIAL_PURPOSE
      : cidrs('WEBHOOK_BLOCKED_NETWORKS', vars.WEBHOOK_BLOCKED_NETWORKS, '169.254.0.0/16,fe80::/10');
  const allowedNetworks = cidrs('WEBHOOK_ALLOWED_NETWORKS', vars.WEBHOOK_ALLOWED_NETWORKS, '10.20.0.0/16,fd00:20::/48');
  // A name is checked when it is saved and when a send connects; a literal address can be checked now.
  const blocked = new BlockedNetworks(blockedNetworks, allowedNetworks);
  if (urls.some((url) => blocked.blocks(new URL(url).hostname))) {
    throw new ConfigError(
      `Invalid configuration: each of WEBHOOK_URLS must not point to ${blocked.what}; ` +
        'open its range with WEBHOOK_ALLOWED_NETWORKS (CIDR ranges, comma-separated)',
    );
  }
  return {
    configured: { urls: [...new Set(urls.map((url) => new URL(url).href))], secrets },
    timeoutMs: vars.WEBHOOK_TIMEOUT_MS ?? 15000,
    retryScheduleMs: durations('WEBHOOK_RETRY_SCHEDULE', vars.WEBHOOK_RETRY_SCHEDULE ?? DEFAULT_RETRY_SCHEDULE),
    retentionMs: duration('WEBHOOK_RETENTION', vars.WEBHOOK_RETENTION ?? DEFAULT_RETENTION),
    concurrency: vars.WEBHOOK_CONCURRENCY ?? 64,
    endpointConcurrency: vars.WEBHOOK_ENDPOINT_CONCURRENCY ?? 16,
    pollIntervalMs: vars.WEBHOOK_POLL_INTERVAL_MS ?? 1000,
    secretOverlapMs: duration('WEBHOOK_SECRET_OVERLAP', vars.WEBHOOK_SECRET_OVERLAP ?? DEFAULT_SECRET_OVERLAP),
    disableAfterMs: duration('WEBHOOK_DISABLE_AFTER', vars.WEBHOOK_DISABLE_AFTER ?? DEFAULT_DISABLE_AFTER),
    blockedNetworks,
    allowedNetworks,
  };
}

/** Longest accepted endpoint URL. */
export const MAX_URL_LENGTH = 2048;

/**
 * Why `value` cannot be an endpoint's URL ("must …"), or undefined when it can: absolute http(s),
 * no credentials (receivers verify the signature instead; fetch refuses them anyway), no fragment,
 * at most MAX_URL_LENGTH characters. Shared by the configuration and the admin API.
 */
export function endpointUrlProblem(value: string): string | undefined {
  if (value.length > MAX_URL_LENGTH) return `must be at most ${MAX_URL_LENGTH} characters`;
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return 'must be an absolute http(s) URL';
  }
  if ((url.protocol !== 'http:' && url.protocol !== 'https:') || url.hostname === '') {
    return 'must be an absolute http(s) URL';
  }
  if (url.username !== '' || url.password !== '') {
    return 'must not hold credentials (user:password@); receivers verify the signature instead';
  }
  if (value.includes('#')) return 'must not have a fragment (#…)';
  return undefined;
}

/** Comma-separated CIDR ranges; one line naming the variable (never its value) when one is not. */
function cidrs(name: string, value: string | undefined, example: string): string[] {
  const ranges = commaList(value);
  if (!ranges.every(isCidr)) {
    throw new ConfigError(`Invalid configuration: ${name} must be comma-separated CIDR ranges such as ${example}`);
  }
  return ranges;
}

/** `address/prefix`, IPv4 or IPv6, with a prefix that fits the family. */
function isCidr(value: string): boolean {
  const [address, prefix, ...rest] = value.split('/');
  if (rest.length > 0 || prefix === undefined || !/^[0-9]{1,3}$/.test(prefix)) return false;
  const family = isIP(address);
  return family !== 0 && Number(prefix) <= (family === 4 ? 32 : 128);
}

function duration(name: string, value: string): number {
  const parsed = durations(name, value);
  if (parsed.length !== 1) throw new ConfigError(`Invalid configuration: ${name} must be one duration, such as 5d`);
  return parsed[0];
}

export function isSecret(value: string): boolean {
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
