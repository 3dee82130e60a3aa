import 'reflect-metadata';
import { Type } from 'class-transformer';
import { IsIn, IsInt, IsNotEmpty, IsOptional, IsString, IsUrl, Matches, Max, Min } from 'class-validator';
import { Documented } from './documented.decorator';

export const DEFAULT_BODY_LIMIT = 1024 * 1024;

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

/**
 * The environment the service reads: the rules each variable must meet, what it does, and its
 * default, the property's initial value (an unset or empty variable keeps it). docs/configuration.md
 * is generated from this class.
 */
export class EnvironmentVariables {
  @Documented('Server', 'The port to listen on.')
  @IntegerBetween('PORT', 0, 65535)
  PORT = 3000;

  @Documented(
    'Server',
    'The address to listen on.',
    '`0.0.0.0` with `NODE_ENV=production` (as the image sets), `127.0.0.1` otherwise, so a printed development token is never usable from another machine',
  )
  @IsOptional()
  @IsNotEmpty({ message: 'HOST must not be empty' })
  HOST?: string;

  @Documented(
    'Database',
    'The store: `sqlite:<path>`, or `postgres://…` / `postgresql://…` (libpq parameters may follow `?`).',
  )
  @IsOptional()
  @Matches(/^(postgres|postgresql):\/\/.+|^sqlite:.+/, {
    message: 'DATABASE_URL must be postgres://…, postgresql://… or sqlite:<path>',
  })
  DATABASE_URL = 'sqlite:./data/plants.db';

  @Documented(
    'Database',
    'PostgreSQL connections per instance; keep instances × this under `max_connections`, with room for migrations, admin tools and a rolling deploy.',
  )
  @IntegerBetween('DATABASE_POOL_MAX', 1, 1000)
  DATABASE_POOL_MAX = 10;

  @Documented(
    'Database',
    'Start-up tries while PostgreSQL is unreachable (backoff from 0.2 s, doubling, at most 5 s); then the service stops with one line.',
  )
  @IntegerBetween('DATABASE_CONNECT_ATTEMPTS', 1, 100)
  DATABASE_CONNECT_ATTEMPTS = 10;

  @Documented(
    'Database',
    'How long any PostgreSQL statement, lock wait or pool wait may take before a 503: set as `statement_timeout`, `lock_timeout` and `idle_in_transaction_session_timeout` on every connection.',
  )
  @IntegerBetween('DATABASE_QUERY_TIMEOUT_MS', 100, 600000)
  DATABASE_QUERY_TIMEOUT_MS = 5000;

  @Documented(
    'Database',
    '`true`: the statements every request runs (the batch insert, reads by id, pages, deletes), whose SQL text never varies, go to PostgreSQL as named prepared statements, parsed and planned once per connection. `false` behind a pooler that cannot keep them: PgBouncer in transaction mode before 1.21, or 1.21–1.23 without `max_prepared_statements` (1.24 keeps them by default).',
  )
  @IsOptional()
  @IsIn(['true', 'false'], { message: 'DATABASE_PREPARED_STATEMENTS must be true or false' })
  DATABASE_PREPARED_STATEMENTS = 'true';

  @Documented(
    'Authentication',
    'Accepted bearer tokens, comma-separated, compared in constant time; make one with `openssl rand -hex 32`. In production each has at least 32 characters.',
    'outside production, a development token kept in `DATA_DIR/dev-token` and printed at start-up; in production this, `ADMIN_TOKENS` or a JWT key is required',
  )
  @IsOptional()
  @IsString()
  AUTH_TOKENS?: string;

  @Documented(
    'Authentication',
    'Also accept JWTs signed by a key of this JWKS (asymmetric algorithms only; `exp` required, with 30 s of clock tolerance; `typ`, if present, `JWT` or `at+jwt`), with `AUTH_JWT_ISSUER` and `AUTH_JWT_AUDIENCE`. `https` in production. Fetched at start-up, and tried again with backoff (1 s doubling, at most 30 s) while that fails; keys already fetched keep working while it is unreachable; a token with an unknown key then gets 503.',
    'off',
  )
  @IsOptional()
  @IsUrl({ require_tld: false, protocols: ['http', 'https'] }, { message: 'AUTH_JWKS_URL must be an http(s) URL' })
  AUTH_JWKS_URL?: string;

  @Documented(
    'Authentication',
    'Instead of `AUTH_JWKS_URL`: the one PEM (SPKI) public key that signs accepted JWTs.',
    'off',
  )
  @IsOptional()
  @Matches(/-----BEGIN PUBLIC KEY-----/, { message: 'AUTH_JWT_PUBLIC_KEY must be a PEM public key (SPKI)' })
  AUTH_JWT_PUBLIC_KEY?: string;

  @Documented('Authentication', 'The `iss` a JWT must carry.', 'none; required with JWTs')
  @IsOptional()
  @IsString()
  AUTH_JWT_ISSUER?: string;

  @Documented('Authentication', 'The `aud` a JWT must carry.', 'none; required with JWTs')
  @IsOptional()
  @IsString()
  AUTH_JWT_AUDIENCE?: string;

  @Documented(
    'Server',
    '`production`: strict start-up checks (a credential required, each static token at least 32 characters; `https` for the JWKS and for webhook endpoints; a webhook secrets key with admin credentials), JSON logs, and `HOST` `0.0.0.0` by default.',
    'unset',
  )
  @IsOptional()
  @IsIn(['production', 'development', 'test'], { message: 'NODE_ENV must be production, development or test' })
  NODE_ENV?: string;

  @Documented('Server', 'The largest request body, in bytes; a larger one is 413.')
  @IntegerBetween('BODY_LIMIT', 1024, 104857600)
  BODY_LIMIT = DEFAULT_BODY_LIMIT;

  @Documented(
    'Server',
    'Where the service keeps its files: the development token, and on SQLite outside production the webhook secrets key.',
  )
  @IsOptional()
  @IsNotEmpty({ message: 'DATA_DIR must not be empty' })
  DATA_DIR = './data';

  @Documented('Logs and metrics', "pino's level.")
  @IsOptional()
  @IsIn(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'], {
    message: 'LOG_LEVEL must be fatal, error, warn, info, debug, trace or silent',
  })
  LOG_LEVEL = 'info';

  @Documented(
    'Logs and metrics',
    'JSON lines, or pretty ones for a terminal. JSON lines are written in 4 KiB writes, at most 250 ms after they are made, and all of them on shutdown.',
    '`json` in production, `pretty` otherwise',
  )
  @IsOptional()
  @IsIn(['json', 'pretty'], { message: 'LOG_FORMAT must be json or pretty' })
  LOG_FORMAT?: string;

  @Documented(
    'Logs and metrics',
    'Which requests get a line: `all`; `failures` (a 4xx, a 5xx, or an answer slower than `LOG_SLOW_MS`); `off`. A line keeps its level (a 4xx `info`, a 5xx `error`), so `LOG_LEVEL` still hides what is below it.',
  )
  @IsOptional()
  @IsIn(['all', 'failures', 'off'], { message: 'LOG_REQUESTS must be all, failures or off' })
  LOG_REQUESTS = 'all';

  @Documented(
    'Logs and metrics',
    'With `LOG_REQUESTS=failures`, a request answered slower than this (ms) gets a line too.',
  )
  @IntegerBetween('LOG_SLOW_MS', 0, 3600000)
  LOG_SLOW_MS = 1000;

  @Documented(
    'Server',
    "`compiled`: the DTOs' rules run as compiled functions (src/validation/README.md); `stock`: Nest's own `ValidationPipe` with the same options, the compiled code never loaded. Every answer is the same either way; `stock` is the way back if a class-validator or class-transformer upgrade breaks the compiled path, at ~35–40 % more CPU per create or 400.",
  )
  @IsOptional()
  @IsIn(['compiled', 'stock'], { message: 'VALIDATION_PIPE must be compiled or stock' })
  VALIDATION_PIPE = 'compiled';

  @Documented('Logs and metrics', '`true`: `/metrics` answers without a token.')
  @IsOptional()
  @IsIn(['true', 'false'], { message: 'METRICS_PUBLIC must be true or false' })
  METRICS_PUBLIC = 'false';

  @Documented('Logs and metrics', '`/metrics` is served on this port only.', 'the main port')
  @IntegerBetween('METRICS_PORT', 1, 65535)
  METRICS_PORT?: number;

  @Documented(
    'Logs and metrics',
    "The scrape job's bearer tokens for `/metrics`, comma-separated (each at least 32 characters in production), valid there only (401 on any other route). A token with the admin permission reads `/metrics` too; any other token gets 403.",
    'none',
  )
  @IsOptional()
  @IsString()
  METRICS_TOKENS?: string;

  @Documented('Server', 'Allowed browser origins, comma-separated.', 'none: CORS off')
  @IsOptional()
  @IsString()
  CORS_ORIGINS?: string;

  @Documented(
    'Limits',
    "Requests per minute per principal (a static token, or a JWT's issuer and subject), all operations together; 429 with `Retry-After` past it. The answers it counts carry `X-RateLimit-Limit`, `-Remaining` and `-Reset`.",
    'no limit',
  )
  @IntegerBetween('RATE_LIMIT_PER_MINUTE', 1, 1000000)
  RATE_LIMIT_PER_MINUTE?: number;

  @Documented(
    'Limits',
    "`redis://…` or `rediss://…`: the rate limit's and the failed authentications' counters in Redis, shared by every instance.",
    'counted in each instance',
  )
  @IsOptional()
  @Matches(/^rediss?:\/\/.+/, { message: 'REDIS_URL must be redis://… or rediss://…' })
  REDIS_URL?: string;

  // A hop count or a list of addresses; parsed in trust-proxy.ts, which names the variable.
  @Documented(
    'Server',
    'The proxies whose `X-Forwarded-For` gives the client address: a hop count (1–100), or addresses, CIDR ranges and `loopback`, `linklocal`, `uniquelocal`, comma-separated. `true` (any sender) is refused.',
  )
  @IsOptional()
  @IsString()
  TRUST_PROXY = 'false';

  @Documented(
    'Limits',
    'Failed authentications per client address (as `TRUST_PROXY` resolves it; an IPv6 client by its /64, an IPv4-mapped address as its IPv4 one) before requests without a valid credential from it get 429 with `Retry-After`; a valid credential still passes.',
  )
  @IntegerBetween('AUTH_FAILURES_PER_MINUTE', 1, 1000000)
  AUTH_FAILURES_PER_MINUTE = 600;

  @Documented(
    'Server',
    'The longest SIGTERM takes to exit; with PostgreSQL at least `DATABASE_QUERY_TIMEOUT_MS` + 1 s (checked at start-up).',
  )
  @IntegerBetween('SHUTDOWN_TIMEOUT_MS', 2000, 600000)
  SHUTDOWN_TIMEOUT_MS = 10000;

  @Documented('Server', "Idle keep-alive; keep it above the load balancer's (ALB: 60 s), so that it closes first.")
  @IntegerBetween('KEEP_ALIVE_TIMEOUT_MS', 1000, 3600000)
  KEEP_ALIVE_TIMEOUT_MS = 75000;

  @Documented('Server', "The longest a request's headers and body may take to arrive; 408 after.")
  @IntegerBetween('REQUEST_TIMEOUT_MS', 1000, 3600000)
  REQUEST_TIMEOUT_MS = 30000;

  // The webhook's lists and durations (URLs, secrets, schedule, retention) are parsed in
  // webhook-config.ts, which names the variable in every message.
  @Documented(
    'Webhooks',
    'Endpoints declared in configuration, comma-separated: absolute `http(s)`, no credentials, no fragment. Reconciled at start-up (one no longer listed is removed); through the API only `PATCH {"disabled"}` pauses or resumes one, and that holds across restarts. A blocked IP literal stops start-up, and so does plain `http` in production unless to an IP inside `WEBHOOK_ALLOWED_NETWORKS`.',
    'none',
  )
  @IsOptional()
  @IsString()
  WEBHOOK_URLS?: string;

  @Documented(
    'Webhooks',
    'The signing secrets of the `WEBHOOK_URLS` endpoints: `whsec_` and the base64 of 24–64 bytes, at most 16, comma-separated, all signing; never stored in the database nor served. Make one with `echo "whsec_$(openssl rand -base64 32)"`.',
    'none; required with `WEBHOOK_URLS`',
  )
  @IsOptional()
  @IsString()
  WEBHOOK_SECRET?: string;

  @Documented(
    'Webhooks',
    "An attempt's deadline: connecting, the answer's headers, and reading at most 4 KiB of its body.",
  )
  @IntegerBetween('WEBHOOK_TIMEOUT_MS', 100, 600000)
  WEBHOOK_TIMEOUT_MS = 15000;

  @Documented(
    'Webhooks',
    'The delays between attempts, comma-separated (units `ms`, `s`, `m`, `h`, `d`), each ±20 % at random; the default is the Standard Webhooks schedule.',
  )
  @IsOptional()
  @IsString()
  WEBHOOK_RETRY_SCHEDULE = '5s,5m,30m,2h,5h,10h,14h,20h,24h';

  @Documented('Webhooks', 'How long finished deliveries are kept, with their attempts and messages.')
  @IsOptional()
  @IsString()
  WEBHOOK_RETENTION = '7d';

  @Documented('Webhooks', 'Sends in flight per instance.')
  @IntegerBetween('WEBHOOK_CONCURRENCY', 1, 1000)
  WEBHOOK_CONCURRENCY = 64;

  @Documented(
    'Webhooks',
    "How often the outbox is read when nothing wakes the dispatcher (retries, other instances' events).",
  )
  @IntegerBetween('WEBHOOK_POLL_INTERVAL_MS', 10, 3600000)
  WEBHOOK_POLL_INTERVAL_MS = 1000;

  @Documented(
    'Webhooks',
    'Sends in flight to one endpoint, across every instance (one probe at a time while it is throttled: five endpoint signals in a row).',
  )
  @IntegerBetween('WEBHOOK_ENDPOINT_CONCURRENCY', 1, 1000)
  WEBHOOK_ENDPOINT_CONCURRENCY = 16;

  @Documented('Webhooks', 'How long a rotated-out secret still signs.')
  @IsOptional()
  @IsString()
  WEBHOOK_SECRET_OVERLAP = '24h';

  @Documented('Webhooks', 'An endpoint with no success for this long, while its attempts fail, is disabled.')
  @IsOptional()
  @IsString()
  WEBHOOK_DISABLE_AFTER = '5d';

  @Documented(
    'Webhooks',
    "CIDR ranges no endpoint may reach, comma-separated, **added to** the special-purpose ranges, which are always blocked (listing `10.0.0.0/8` leaves loopback and `169.254.169.254` blocked): the IANA IPv4 and IPv6 special-purpose registries (loopback, `0.0.0.0/8`, `::`, RFC 1918, `100.64.0.0/10`, link-local, `fc00::/7`, multicast, reserved, documentation, benchmarking, Teredo `2001::/32`, …), IPv4-compatible `::/96`, and Azure's `168.63.129.16`. Checked when an endpoint is saved (400 naming `WEBHOOK_ALLOWED_NETWORKS`) and when each send connects, against what the name resolves to then (a name that does not resolve within 3 s when saved is checked at its sends only).",
    'none beyond the special-purpose ranges',
  )
  @IsOptional()
  @IsString()
  WEBHOOK_BLOCKED_NETWORKS?: string;

  @Documented(
    'Webhooks',
    'CIDR ranges opened inside the blocked ones, comma-separated: the only way to open one (`10.20.0.0/16` for an internal receiver, `127.0.0.0/8,::1/128` for one on this machine). In production plain `http` is allowed only to an IP address inside them.',
    'none',
  )
  @IsOptional()
  @IsString()
  WEBHOOK_ALLOWED_NETWORKS?: string;

  @Documented(
    'Authentication',
    'Static tokens with the admin permission (manage webhook endpoints; also accepted on `/plants`), comma-separated; a JWT whose `scope` holds `webhooks:manage` has it too. In production each has at least 32 characters.',
    'none',
  )
  @IsOptional()
  @IsString()
  ADMIN_TOKENS?: string;

  @Documented(
    'Webhooks',
    'The most API endpoints (disabled ones count, `config` ones do not); at the cap `POST /webhooks/endpoints` is 409.',
  )
  @IntegerBetween('WEBHOOK_MAX_ENDPOINTS', 1, 10000)
  WEBHOOK_MAX_ENDPOINTS = 100;

  // Keys, comma-separated; checked in webhook-config.ts, which names the variable, never a value.
  @Documented(
    'Webhooks',
    'The keys that encrypt endpoint secrets at rest (AES-256-GCM): the base64 of 32 random bytes (`openssl rand -base64 32`), comma-separated to rotate (the first encrypts, every one decrypts; start-up re-encrypts every row under the first). Each sealed secret is bound to its endpoint: a value copied to another row does not open there.',
    'on SQLite outside production, made in `DATA_DIR/webhook-secrets.key` (0600); required with PostgreSQL or `NODE_ENV=production` when `ADMIN_TOKENS` or JWTs are configured',
  )
  @IsOptional()
  @IsString()
  WEBHOOK_SECRETS_KEY?: string;
}
