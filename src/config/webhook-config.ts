import { isIP } from 'node:net';
import { BlockedNetworks } from '../common/networks/blocked-networks';
import { plainHttpProblem } from '../common/networks/plain-http';
import { DatabaseConfig, SecretsKeyConfig, WebhookConfig } from './app-config';
import { ConfigError } from './config.error';
import { EnvironmentVariables } from './environment-variables';
import { commaList } from './comma-list';

const UNITS_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };
const DURATION = /^([0-9]{1,9})(ms|s|m|h|d)$/;
// `whsec_` and the base64 of 24 to 64 random bytes (Standard Webhooks).
const SECRET = /^whsec_([A-Za-z0-9+/]+={0,2})$/;

/** What the webhook settings depend on besides their own variables. */
export interface WebhookConfigContext {
  readonly production: boolean;
  readonly database: DatabaseConfig['kind'];
  /** Resolved DATA_DIR, where a development key is kept. */
  readonly dataDir: string;
  /** ADMIN_TOKENS or JWTs are configured: someone can create endpoints, whose secrets are stored. */
  readonly adminCredential: boolean;
}

/**
 * The most secrets WEBHOOK_SECRET may list (each signs every delivery, so the `webhook-signature` header
 * stays bounded: the document declares its length). A rotation needs two or three.
 */
export const MAX_WEBHOOK_SECRETS = 16;

/** The webhook settings. Messages name the variable, never its value. */
export function webhookConfig(vars: EnvironmentVariables, context: WebhookConfigContext): WebhookConfig {
  const urls = commaList(vars.WEBHOOK_URLS);
  const invalid = urls.map(endpointUrlProblem).find((problem) => problem !== undefined);
  if (invalid !== undefined) throw new ConfigError(`Invalid configuration: each of WEBHOOK_URLS ${invalid}`);
  const secrets = commaList(vars.WEBHOOK_SECRET);
  if (urls.length > 0 && secrets.length === 0) {
    throw new ConfigError('Invalid configuration: WEBHOOK_SECRET is required when WEBHOOK_URLS is set');
  }
  if (secrets.length > MAX_WEBHOOK_SECRETS) {
    throw new ConfigError(`Invalid configuration: WEBHOOK_SECRET must list at most ${MAX_WEBHOOK_SECRETS} secrets`);
  }
  if (!secrets.every(isSecret)) {
    throw new ConfigError(
      'Invalid configuration: WEBHOOK_SECRET must be whsec_ followed by the base64 of 24 to 64 bytes (comma-separated for several)',
    );
  }
  // Added to the special-purpose ranges, which are always blocked (see BlockedNetworks).
  const blockedNetworks = cidrs(
    'WEBHOOK_BLOCKED_NETWORKS',
    vars.WEBHOOK_BLOCKED_NETWORKS,
    '192.0.2.0/24,2001:db8::/32',
  );
  const allowedNetworks = cidrs('WEBHOOK_ALLOWED_NETWORKS', vars.WEBHOOK_ALLOWED_NETWORKS, '10.20.0.0/16,fd00:20::/48');
  // A name is checked when it is saved and when a send connects; a literal address can be checked now.
  const blocked = new BlockedNetworks(blockedNetworks, allowedNetworks);
  const plainHttp = urls.map((url) => plainHttpProblem(url, context.production, blocked)).find(Boolean);
  if (plainHttp !== undefined) throw new ConfigError(`Invalid configuration: each of WEBHOOK_URLS ${plainHttp}`);
  const what = urls.map((url) => blocked.blockedAs(new URL(url).hostname)).find(Boolean);
  if (what !== undefined) {
    throw new ConfigError(
      `Invalid configuration: each of WEBHOOK_URLS must not point to ${what}; ` +
        'open its range with WEBHOOK_ALLOWED_NETWORKS (CIDR ranges, comma-separated)',
    );
  }
  return {
    configured: { urls: [...new Set(urls.map((url) => new URL(url).href))], secrets },
    timeoutMs: vars.WEBHOOK_TIMEOUT_MS,
    retryScheduleMs: durations('WEBHOOK_RETRY_SCHEDULE', vars.WEBHOOK_RETRY_SCHEDULE),
    retentionMs: duration('WEBHOOK_RETENTION', vars.WEBHOOK_RETENTION),
    concurrency: vars.WEBHOOK_CONCURRENCY,
    endpointConcurrency: vars.WEBHOOK_ENDPOINT_CONCURRENCY,
    pollIntervalMs: vars.WEBHOOK_POLL_INTERVAL_MS,
    secretOverlapMs: duration('WEBHOOK_SECRET_OVERLAP', vars.WEBHOOK_SECRET_OVERLAP),
    disableAfterMs: duration('WEBHOOK_DISABLE_AFTER', vars.WEBHOOK_DISABLE_AFTER),
    blockedNetworks,
    allowedNetworks,
    httpsOnly: context.production,
    maxEndpoints: vars.WEBHOOK_MAX_ENDPOINTS,
    secretsKey: secretsKeyConfig(vars.WEBHOOK_SECRETS_KEY, context),
  };
}

/** Whether `value` is the base64 of exactly 32 bytes, an AES-256 key (`openssl rand -base64 32`). */
export function isSecretsKey(value: string): boolean {
  return /^[A-Za-z0-9+/]{43}=$/.test(value) && Buffer.from(value, 'base64').length === 32;
}

/**
 * WEBHOOK_SECRETS_KEY, or where the key comes from without it. PostgreSQL (instances share the rows,
 * so they need one key) and production need it as soon as an admin credential can create endpoints.
 */
function secretsKeyConfig(value: string | undefined, context: WebhookConfigContext): SecretsKeyConfig {
  const keys = commaList(value);
  if (keys.length > 0) {
    if (!keys.every(isSecretsKey)) {
      throw new ConfigError(
        'Invalid configuration: WEBHOOK_SECRETS_KEY must be the base64 of 32 random bytes (openssl rand -base64 32), comma-separated to rotate',
      );
    }
    return { kind: 'keys', keys };
  }
  if (context.database === 'sqlite' && !context.production) return { kind: 'data-dir', dataDir: context.dataDir };
  if (context.adminCredential) {
    const where = context.database === 'postgres' ? 'with PostgreSQL' : 'when NODE_ENV=production';
    throw new ConfigError(
      `Invalid configuration: WEBHOOK_SECRETS_KEY is required ${where} when ADMIN_TOKENS or JWTs are configured: it encrypts the webhook endpoint secrets (make one with: openssl rand -base64 32)`,
    );
  }
  return { kind: 'none' };
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
  if (value.includes('\u0000')) return 'must not contain NUL (\\u0000)';
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
