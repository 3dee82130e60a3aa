import { resolve } from 'node:path';
import { plainToInstance } from 'class-transformer';
import { validateSync } from 'class-validator';
import { AppConfig, DatabaseConfig, JwtConfig, LogConfig, ValidationPipeMode } from './app-config';
import { ConfigError } from './config.error';
import { EnvironmentVariables } from './environment-variables';
import { webhookConfig } from './webhook-config';
import { SHUTDOWN_RESERVE_MS } from '../lifecycle/graceful-shutdown';
import { commaList } from './comma-list';
import { trustProxy } from './trust-proxy';

export const DEFAULT_DATABASE_URL = 'sqlite:./data/plants.db';
export const DEFAULT_BODY_LIMIT = 1024 * 1024;
// The characters RFC 6750 allows in a bearer token.
const TOKEN68 = /^[A-Za-z0-9\-._~+/]+=*$/;
// In production a static token must be at least this long (`openssl rand -hex 32` makes 64 characters).
const MIN_PRODUCTION_TOKEN_LENGTH = 32;

/**
 * Validates the environment and turns it into an `AppConfig`.
 * Throws a `ConfigError` whose message names every bad variable (never its value: it may be a secret).
 */
export function loadConfig(env: NodeJS.ProcessEnv): AppConfig {
  // An empty variable is treated as unset, the way shells and compose files usually mean it.
  const present = Object.fromEntries(Object.entries(env).filter(([, value]) => value !== ''));
  const vars = plainToInstance(EnvironmentVariables, present);
  const errors = validateSync(vars, { stopAtFirstError: true });
  if (errors.length > 0) {
    const reasons = errors.flatMap((error) => Object.values(error.constraints ?? {}));
    throw new ConfigError(`Invalid configuration: ${reasons.join('; ')}`);
  }

  const production = vars.NODE_ENV === 'production';
  const authTokens = commaList(vars.AUTH_TOKENS);
  if (!authTokens.every((token) => TOKEN68.test(token))) {
    throw new ConfigError(
      'Invalid configuration: AUTH_TOKENS must be a comma-separated list of bearer tokens (letters, digits and -._~+/=)',
    );
  }
  const adminTokens = commaList(vars.ADMIN_TOKENS);
  if (!adminTokens.every((token) => TOKEN68.test(token))) {
    throw new ConfigError(
      'Invalid configuration: ADMIN_TOKENS must be a comma-separated list of bearer tokens (letters, digits and -._~+/=)',
    );
  }
  const jwt = jwtConfig(vars);
  if (production && authTokens.length === 0 && adminTokens.length === 0 && jwt === undefined) {
    throw new ConfigError(
      'Invalid configuration: AUTH_TOKENS (or AUTH_JWKS_URL / AUTH_JWT_PUBLIC_KEY) must be set when NODE_ENV=production',
    );
  }
  if (production && adminTokens.some((token) => token.length < MIN_PRODUCTION_TOKEN_LENGTH)) {
    throw new ConfigError(
      `Invalid configuration: each of ADMIN_TOKENS must be at least ${MIN_PRODUCTION_TOKEN_LENGTH} characters when NODE_ENV=production (make one with: openssl rand -hex 32)`,
    );
  }
  if (production && authTokens.some((token) => token.length < MIN_PRODUCTION_TOKEN_LENGTH)) {
    throw new ConfigError(
      `Invalid configuration: each of AUTH_TOKENS must be at least ${MIN_PRODUCTION_TOKEN_LENGTH} characters when NODE_ENV=production (make one with: openssl rand -hex 32)`,
    );
  }
  if (production && jwt?.jwksUrl !== undefined && !jwt.jwksUrl.startsWith('https:')) {
    throw new ConfigError('Invalid configuration: AUTH_JWKS_URL must be https when NODE_ENV=production');
  }
  const database = databaseConfig(vars);
  const dataDir = resolve(vars.DATA_DIR ?? './data');
  const shutdownMs = vars.SHUTDOWN_TIMEOUT_MS ?? 10000;
  if (database.kind === 'postgres' && shutdownMs < database.queryTimeoutMs + SHUTDOWN_RESERVE_MS) {
    throw new ConfigError(
      `Invalid configuration: SHUTDOWN_TIMEOUT_MS (${shutdownMs}) must be at least DATABASE_QUERY_TIMEOUT_MS (${database.queryTimeoutMs}) + ${SHUTDOWN_RESERVE_MS}: a request in flight at SIGTERM may wait that long on PostgreSQL`,
    );
  }

  return {
    port: vars.PORT ?? 3000,
    // Outside production the service may print a development token: only this machine can use it.
    host: vars.HOST ?? (production ? '0.0.0.0' : '127.0.0.1'),
    database,
    authTokens,
    adminTokens,
    authFailuresPerMinute: vars.AUTH_FAILURES_PER_MINUTE ?? 600,
    jwt,
    production,
    bodyLimit: vars.BODY_LIMIT ?? DEFAULT_BODY_LIMIT,
    dataDir,
    log: {
      level: vars.LOG_LEVEL ?? 'info',
      format: (vars.LOG_FORMAT as LogConfig['format'] | undefined) ?? (production ? 'json' : 'pretty'),
      requests: (vars.LOG_REQUESTS as LogConfig['requests'] | undefined) ?? 'all',
      slowMs: vars.LOG_SLOW_MS ?? 1000,
    },
    metrics: { public: vars.METRICS_PUBLIC === 'true', port: vars.METRICS_PORT },
    corsOrigins: commaList(vars.CORS_ORIGINS),
    rateLimit: vars.RATE_LIMIT_PER_MINUTE === undefined ? undefined : { perMinute: vars.RATE_LIMIT_PER_MINUTE },
    redisUrl: vars.REDIS_URL,
    trustProxy: trustProxy(vars.TRUST_PROXY),
    validationPipe: (vars.VALIDATION_PIPE as ValidationPipeMode | undefined) ?? 'compiled',
    webhooks: webhookConfig(vars, {
      production,
      database: database.kind,
      dataDir,
      adminCredential: adminTokens.length > 0 || jwt !== undefined,
    }),
    timeouts: {
      shutdownMs,
      // Longer than the idle timeout of common load balancers (AWS ALB: 60 s), so they close first.
      keepAliveMs: vars.KEEP_ALIVE_TIMEOUT_MS ?? 75000,
      requestMs: vars.REQUEST_TIMEOUT_MS ?? 30000,
    },
  };
}

function jwtConfig(vars: EnvironmentVariables): JwtConfig | undefined {
  const {
    AUTH_JWKS_URL: jwksUrl,
    AUTH_JWT_PUBLIC_KEY: publicKey,
    AUTH_JWT_ISSUER: issuer,
    AUTH_JWT_AUDIENCE: audience,
  } = vars;
  if (jwksUrl === undefined && publicKey === undefined) return undefined;
  if (jwksUrl !== undefined && publicKey !== undefined) {
    throw new ConfigError('Invalid configuration: set AUTH_JWKS_URL or AUTH_JWT_PUBLIC_KEY, not both');
  }
  if (issuer === undefined || audience === undefined) {
    throw new ConfigError(
      'Invalid configuration: AUTH_JWT_ISSUER and AUTH_JWT_AUDIENCE are required with JWT bearer tokens',
    );
  }
  return { jwksUrl, publicKey, issuer, audience };
}

function databaseConfig(vars: EnvironmentVariables): DatabaseConfig {
  const url = vars.DATABASE_URL ?? DEFAULT_DATABASE_URL;
  if (url.startsWith('sqlite:')) {
    return { kind: 'sqlite', path: resolve(url.slice('sqlite:'.length)) };
  }
  return {
    kind: 'postgres',
    url,
    poolMax: vars.DATABASE_POOL_MAX ?? 10,
    connectAttempts: vars.DATABASE_CONNECT_ATTEMPTS ?? 10,
    queryTimeoutMs: vars.DATABASE_QUERY_TIMEOUT_MS ?? 5000,
    preparedStatements: vars.DATABASE_PREPARED_STATEMENTS !== 'false',
  };
}
