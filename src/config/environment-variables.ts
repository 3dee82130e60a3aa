import 'reflect-metadata';
import { Type } from 'class-transformer';
import { IsIn, IsInt, IsNotEmpty, IsOptional, IsString, IsUrl, Matches, Max, Min } from 'class-validator';

/** An integer variable in [min, max]; one message for every way it can be wrong. */
function IntegerBetween(name: string, min: number, max: number): PropertyDecorator {
  const message = `${name} must be an integer between ${min} and ${max}`;
  return (target, key) => {
    IsOptional()(target, key);
    Type(() => Number)(target, key);
    IsInt({ message })(target, key);
    Min(min, { message })(target, key);
    Max(max, { message })(target, key);
  };
}

/** The environment the service reads, with the rules each variable must meet. */
export class EnvironmentVariables {
  @IntegerBetween('PORT', 0, 65535)
  PORT?: number;

  @IsOptional()
  @IsNotEmpty({ message: 'HOST must not be empty' })
  HOST?: string;

  @IsOptional()
  @Matches(/^(postgres|postgresql):\/\/.+|^sqlite:.+/, {
    message: 'DATABASE_URL must be postgres://…, postgresql://… or sqlite:<path>',
  })
  DATABASE_URL?: string;

  @IntegerBetween('DATABASE_POOL_MAX', 1, 1000)
  DATABASE_POOL_MAX?: number;

  @IntegerBetween('DATABASE_CONNECT_ATTEMPTS', 1, 100)
  DATABASE_CONNECT_ATTEMPTS?: number;

  @IntegerBetween('DATABASE_QUERY_TIMEOUT_MS', 100, 600000)
  DATABASE_QUERY_TIMEOUT_MS?: number;

  @IsOptional()
  @IsIn(['true', 'false'], { message: 'DATABASE_PREPARED_STATEMENTS must be true or false' })
  DATABASE_PREPARED_STATEMENTS?: string;

  @IsOptional()
  @IsString()
  AUTH_TOKENS?: string;

  @IsOptional()
  @IsUrl({ require_tld: false, protocols: ['http', 'https'] }, { message: 'AUTH_JWKS_URL must be an http(s) URL' })
  AUTH_JWKS_URL?: string;

  @IsOptional()
  @Matches(/-----BEGIN PUBLIC KEY-----/, { message: 'AUTH_JWT_PUBLIC_KEY must be a PEM public key (SPKI)' })
  AUTH_JWT_PUBLIC_KEY?: string;

  @IsOptional()
  @IsString()
  AUTH_JWT_ISSUER?: string;

  @IsOptional()
  @IsString()
  AUTH_JWT_AUDIENCE?: string;

  @IsOptional()
  @IsIn(['production', 'development', 'test'], { message: 'NODE_ENV must be production, development or test' })
  NODE_ENV?: string;

  @IntegerBetween('BODY_LIMIT', 1024, 104857600)
  BODY_LIMIT?: number;

  @IsOptional()
  @IsNotEmpty({ message: 'DATA_DIR must not be empty' })
  DATA_DIR?: string;

  @IsOptional()
  @IsIn(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'], {
    message: 'LOG_LEVEL must be fatal, error, warn, info, debug, trace or silent',
  })
  LOG_LEVEL?: string;

  @IsOptional()
  @IsIn(['json', 'pretty'], { message: 'LOG_FORMAT must be json or pretty' })
  LOG_FORMAT?: string;

  @IsOptional()
  @IsIn(['all', 'failures', 'off'], { message: 'LOG_REQUESTS must be all, failures or off' })
  LOG_REQUESTS?: string;

  @IntegerBetween('LOG_SLOW_MS', 0, 3600000)
  LOG_SLOW_MS?: number;

  @IsOptional()
  @IsIn(['compiled', 'stock'], { message: 'VALIDATION_PIPE must be compiled or stock' })
  VALIDATION_PIPE?: string;

  @IsOptional()
  @IsIn(['true', 'false'], { message: 'METRICS_PUBLIC must be true or false' })
  METRICS_PUBLIC?: string;

  @IntegerBetween('METRICS_PORT', 1, 65535)
  METRICS_PORT?: number;

  @IsOptional()
  @IsString()
  CORS_ORIGINS?: string;

  @IntegerBetween('RATE_LIMIT_PER_MINUTE', 1, 1000000)
  RATE_LIMIT_PER_MINUTE?: number;

  @IsOptional()
  @Matches(/^rediss?:\/\/.+/, { message: 'REDIS_URL must be redis://… or rediss://…' })
  REDIS_URL?: string;

  // A hop count or a list of addresses; parsed in trust-proxy.ts, which names the variable.
  @IsOptional()
  @IsString()
  TRUST_PROXY?: string;

  @IntegerBetween('AUTH_FAILURES_PER_MINUTE', 1, 1000000)
  AUTH_FAILURES_PER_MINUTE?: number;

  @IntegerBetween('SHUTDOWN_TIMEOUT_MS', 2000, 600000)
  SHUTDOWN_TIMEOUT_MS?: number;

  @IntegerBetween('KEEP_ALIVE_TIMEOUT_MS', 1000, 3600000)
  KEEP_ALIVE_TIMEOUT_MS?: number;

  @IntegerBetween('REQUEST_TIMEOUT_MS', 1000, 3600000)
  REQUEST_TIMEOUT_MS?: number;

  // The webhook's lists and durations (URLs, secrets, schedule, retention) are parsed in
  // webhook-config.ts, which names the variable in every message.
  @IsOptional()
  @IsString()
  WEBHOOK_URLS?: string;

  @IsOptional()
  @IsString()
  WEBHOOK_SECRET?: string;

  @IntegerBetween('WEBHOOK_TIMEOUT_MS', 100, 600000)
  WEBHOOK_TIMEOUT_MS?: number;

  @IsOptional()
  @IsString()
  WEBHOOK_RETRY_SCHEDULE?: string;

  @IsOptional()
  @IsString()
  WEBHOOK_RETENTION?: string;

  @IntegerBetween('WEBHOOK_CONCURRENCY', 1, 1000)
  WEBHOOK_CONCURRENCY?: number;

  @IntegerBetween('WEBHOOK_POLL_INTERVAL_MS', 10, 3600000)
  WEBHOOK_POLL_INTERVAL_MS?: number;

  @IntegerBetween('WEBHOOK_ENDPOINT_CONCURRENCY', 1, 1000)
  WEBHOOK_ENDPOINT_CONCURRENCY?: number;

  @IsOptional()
  @IsString()
  WEBHOOK_SECRET_OVERLAP?: string;

  @IsOptional()
  @IsString()
  WEBHOOK_DISABLE_AFTER?: string;

  @IsOptional()
  @IsString()
  WEBHOOK_BLOCKED_NETWORKS?: string;

  @IsOptional()
  @IsString()
  WEBHOOK_ALLOWED_NETWORKS?: string;

  @IsOptional()
  @IsString()
  ADMIN_TOKENS?: string;

  @IntegerBetween('WEBHOOK_MAX_ENDPOINTS', 1, 10000)
  WEBHOOK_MAX_ENDPOINTS?: number;

  // Keys, comma-separated; checked in webhook-config.ts, which names the variable, never a value.
  @IsOptional()
  @IsString()
  WEBHOOK_SECRETS_KEY?: string;
}
