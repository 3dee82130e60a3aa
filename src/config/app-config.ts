/** Where plants are stored, parsed from `DATABASE_URL`. */
export type DatabaseConfig =
  | { readonly kind: 'sqlite'; readonly path: string }
  | {
      readonly kind: 'postgres';
      readonly url: string;
      /** Connections per instance (DATABASE_POOL_MAX). */
      readonly poolMax: number;
      /** Start-up tries before giving up on an unreachable server (DATABASE_CONNECT_ATTEMPTS). */
      readonly connectAttempts: number;
      /** How long a create or health query may wait for the server's answer (DATABASE_QUERY_TIMEOUT_MS). */
      readonly queryTimeoutMs: number;
      /** Fixed-text statements as named, server-side prepared ones (DATABASE_PREPARED_STATEMENTS). */
      readonly preparedStatements: boolean;
    };

/** Signed JWTs accepted as bearer tokens, besides the static ones. */
export interface JwtConfig {
  readonly jwksUrl?: string;
  readonly publicKey?: string;
  readonly issuer: string;
  readonly audience: string;
}

/**
 * The new-plant webhook. Always on: endpoints come from configuration (`configured`) or from the
 * admin API; with none, nothing is recorded. Provided under this class by `ConfigModule`, so a
 * provider takes it as a plain constructor parameter.
 */
export abstract class WebhookConfig {
  /** Endpoints declared by WEBHOOK_URLS, signed with WEBHOOK_SECRET, reconciled at start-up. */
  abstract readonly configured: {
    /** Absolute http(s) URLs, normalised (`new URL(…).href`). */
    readonly urls: readonly string[];
    /** Signing secrets, `whsec_…`; every one signs (rotation). Never logged. */
    readonly secrets: readonly string[];
  };
  /** Per-attempt timeout. */
  abstract readonly timeoutMs: number;
  /** Delays between attempts; the first attempt is at once, so there are `length + 1` attempts. */
  abstract readonly retryScheduleMs: readonly number[];
  /** How long finished deliveries (with their attempts and messages) are kept before they are pruned. */
  abstract readonly retentionMs: number;
  /** Deliveries in flight at once, per instance. */
  abstract readonly concurrency: number;
  /** Deliveries in flight at once to one endpoint, across every instance. */
  abstract readonly endpointConcurrency: number;
  /** How often the outbox is read when nothing wakes the dispatcher (other instances' events, retries). */
  abstract readonly pollIntervalMs: number;
  /** How long a rotated-out secret still signs. */
  abstract readonly secretOverlapMs: number;
  /** An endpoint with no success for this long, while its attempts fail, is disabled. */
  abstract readonly disableAfterMs: number;
  /**
   * CIDR ranges (`address/prefix`) no endpoint may reach besides the special-purpose ranges, which
   * are always blocked (WEBHOOK_BLOCKED_NETWORKS adds, never removes).
   */
  abstract readonly blockedNetworks: readonly string[];
  /** CIDR ranges opened inside the blocked ones (WEBHOOK_ALLOWED_NETWORKS), e.g. an internal receiver's: the only way to open one. */
  abstract readonly allowedNetworks: readonly string[];
  /** Production: endpoint URLs must be https, except plain http to an IP address inside `allowedNetworks`. */
  abstract readonly httpsOnly: boolean;
  /** Most `api` endpoints, disabled ones included (WEBHOOK_MAX_ENDPOINTS). */
  abstract readonly maxEndpoints: number;
  /** The key(s) that encrypt endpoint secrets at rest (WEBHOOK_SECRETS_KEY). */
  abstract readonly secretsKey: SecretsKeyConfig;
}

/**
 * Where the key that encrypts endpoint secrets comes from: WEBHOOK_SECRETS_KEY (base64 of 32 bytes
 * each; the first encrypts, every one decrypts); a key file made in DATA_DIR (SQLite outside
 * production, when it is unset); or none (no admin credential, so no endpoint secret to store).
 */
export type SecretsKeyConfig =
  | { readonly kind: 'keys'; readonly keys: readonly string[] }
  | { readonly kind: 'data-dir'; readonly dataDir: string }
  | { readonly kind: 'none' };

/**
 * The rate limit: requests per minute per principal (counted in Redis when `AppConfig.redisUrl` is
 * set). Provided under this class by `ConfigModule` when RATE_LIMIT_PER_MINUTE is set.
 */
export abstract class RateLimitConfig {
  abstract readonly perMinute: number;
}

/**
 * VALIDATION_PIPE: the global pipe's validation, the compiled rules (src/validation/README.md) or
 * Nest's own `ValidationPipe` with the same options; the same answers either way.
 */
export type ValidationPipeMode = 'compiled' | 'stock';

/**
 * The logger: its level and format, and which requests get a line (LOG_REQUESTS): every one, only
 * failures (4xx, 5xx, or slower than `slowMs`), or none. A line keeps its level whichever is chosen.
 */
export interface LogConfig {
  readonly level: string;
  readonly format: 'json' | 'pretty';
  readonly requests: 'all' | 'failures' | 'off';
  readonly slowMs: number;
}

/** TRUST_PROXY: off, a number of proxy hops, or the addresses and CIDR ranges of trusted proxies. */
export type TrustProxy = false | number | readonly string[];

/**
 * The validated configuration of the service. Built once from the environment by `loadConfig`
 * and provided under this class as its DI token, so nothing else reads `process.env`.
 */
export abstract class AppConfig {
  abstract readonly port: number;
  /** HOST: by default every interface in production (the image), only the loopback interface otherwise. */
  abstract readonly host: string;
  abstract readonly database: DatabaseConfig;
  /** Accepted static bearer tokens; none and no JWT means "make a development token" (never in production). */
  abstract readonly authTokens: readonly string[];
  /** Static tokens with the admin permission (ADMIN_TOKENS): they manage webhook endpoints, and are accepted on /plants too. */
  abstract readonly adminTokens: readonly string[];
  /** Failed authentications per client address and minute before that address gets 429 without a valid credential. */
  abstract readonly authFailuresPerMinute: number;
  abstract readonly jwt?: JwtConfig;
  abstract readonly production: boolean;
  /** Largest accepted request body, in bytes. */
  abstract readonly bodyLimit: number;
  /** Folder for files the service keeps (the development token). */
  abstract readonly dataDir: string;
  abstract readonly log: LogConfig;
  /**
   * `/metrics`: public, or for a token of `tokens` (METRICS_TOKENS, a scrape job's) or the admin
   * permission; or only on its own port, without a token, when `port` is set.
   */
  abstract readonly metrics: { readonly public: boolean; readonly port?: number; readonly tokens: readonly string[] };
  /** Origins allowed by CORS; empty means CORS is off. */
  abstract readonly corsOrigins: readonly string[];
  /** Undefined when RATE_LIMIT_PER_MINUTE is unset: no rate limit. */
  abstract readonly rateLimit?: RateLimitConfig;
  /** REDIS_URL: the rate limit's and the failed authentications' counters, shared by every instance. Unset: counted in each process. */
  abstract readonly redisUrl?: string;
  /** Fastify's `trustProxy`: whether, and from which hops, `X-Forwarded-For` gives the client address. */
  abstract readonly trustProxy: TrustProxy;
  abstract readonly validationPipe: ValidationPipeMode;
  abstract readonly webhooks: WebhookConfig;
  abstract readonly timeouts: { readonly shutdownMs: number; readonly keepAliveMs: number; readonly requestMs: number };
}
