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

export { DEFAULT_BODY_LIMIT } from './environment-variables';
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
  const authTokens = bearerTokens('AUTH_TOKENS', vars.AUTH_TOKENS);
  const adminTokens = bearerTokens('ADMIN_TOKENS', vars.ADMIN_TOKENS);
  const metricsTokens = bearerTokens('METRICS_TOKENS', vars.METRICS_TOKENS);
  const jwt = jwtConfig(vars);
  if (production && authTokens.length === 0 && adminTokens.length === 0 && jwt === undefined) {
    throw new ConfigError(
      'Invalid configuration: AUTH_TOKENS (or AUTH_JWKS_URL / AUTH_JWT_PUBLIC_KEY) must be set when NODE_ENV=production',
    );
  }
  if (production) {
    longEnough('ADMIN_TOKENS', adminTokens);
    longEnough('AUTH_TOKENS', authTokens);
    longEnough('METRICS_TOKENS', metricsTokens);
  }
  if (production && jwt?.jwksUrl !== undefined && !jwt.jwksUrl.startsWith('https:')) {
    throw new ConfigError('Invalid configuration: AUTH_JWKS_URL must be https when NODE_ENV=production');
  }
  const database = databaseConfig(vars);
  const dataDir = resolve(vars.DATA_DIR);
  const shutdownMs = vars.SHUTDOWN_TIMEOUT_MS;
  if (database.kind === 'postgres' && shutdownMs < database.queryTimeoutMs + SHUTDOWN_RESERVE_MS) {
    throw new ConfigError(
      `Invalid configuration: SHUTDOWN_TIMEOUT_MS (${shutdownMs}) must be at least DATABASE_QUERY_TIMEOUT_MS (${database.queryTimeoutMs}) + ${SHUTDOWN_RESERVE_MS}: a request in flight at SIGTERM may wait that long on PostgreSQL`,
    );
  }

  return {
    port: vars.PORT,
    // Outside production the service may print a development token: only this machine can use it.
    host: vars.HOST ?? (production ? '0.0.0.0' : '127.0.0.1'),
    database,
    authTokens,
    adminTokens,
    authFailuresPerMinute: vars.AUTH_FAILURES_PER_MINUTE,
    jwt,
    production,
    bodyLimit: vars.BODY_LIMIT,
    dataDir,
    log: {
      level: vars.LOG_LEVEL,
      format: (vars.LOG_FORMAT as LogConfig['format'] | undefined) ?? (production ? 'json' : 'pretty'),
      requests: vars.LOG_REQUESTS as LogConfig['requests'],
      slowMs: vars.LOG_SLOW_MS,
    },
    metrics: { public: vars.METRICS_PUBLIC === 'true', port: vars.METRICS_PORT, tokens: metricsTokens },
    corsOrigins: commaList(vars.CORS_ORIGINS),
    rateLimit: vars.RATE_LIMIT_PER_MINUTE === undefined ? undefined : { perMinute: vars.RATE_LIMIT_PER_MINUTE },
    redisUrl: vars.REDIS_URL,
    trustProxy: trustProxy(vars.TRUST_PROXY),
    validationPipe: vars.VALIDATION_PIPE as ValidationPipeMode,
    webhooks: webhookConfig(vars, {
      production,
      database: database.kind,
      dataDir,
      adminCredential: adminTokens.length > 0 || jwt !== undefined,
    }),
    timeouts: {
      shutdownMs,
      keepAliveMs: vars.KEEP_ALIVE_TIMEOUT_MS,
      requestMs: vars.REQUEST_TIMEOUT_MS,
    },
  };
}

/** A comma-separated list of static bearer tokens in `name`, each of the characters RFC 6750 allows. */
function bearerTokens(name: string, value: string | undefined): string[] {
  const tokens = commaList(value);
  if (!tokens.every((token) => TOKEN68.test(token))) {
    throw new ConfigError(
      `Invalid configuration: ${name} must be a comma-separated list of bearer tokens (letters, digits and -._~+/=)`,
    );
  }
  return tokens;
}

/** In production a static token is long enough not to be guessed; the message names `name`, never a token. */
function longEnough(name: string, tokens: readonly string[]): void {
  if (tokens.some((token) => token.length < MIN_PRODUCTION_TOKEN_LENGTH)) {
    throw new ConfigError(
      `Invalid configuration: each of ${name} must be at least ${MIN_PRODUCTION_TOKEN_LENGTH} characters when NODE_ENV=production (make one with: openssl rand -hex 32)`,
    );
  }
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
  const url = vars.DATABASE_URL;
  if (url.startsWith('sqlite:')) {
    return { kind: 'sqlite', path: resolve(url.slice('sqlite:'.length)) };
  }
  return {
    kind: 'postgres',
    url,
    poolMax: vars.DATABASE_POOL_MAX,
    connectAttempts: vars.DATABASE_CONNECT_ATTEMPTS,
    queryTimeoutMs: vars.DATABASE_QUERY_TIMEOUT_MS,
    preparedStatements: vars.DATABASE_PREPARED_STATEMENTS !== 'false',
  };
}
