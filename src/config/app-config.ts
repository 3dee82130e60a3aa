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
    };

/**
 * The validated configuration of the service. Built once from the environment by `loadConfig`
 * and provided under this class as its DI token, so nothing else reads `process.env`.
 */
export abstract class AppConfig {
  abstract readonly port: number;
  abstract readonly host: string;
  abstract readonly database: DatabaseConfig;
  /** Accepted bearer tokens; empty means "make a development token" (never in production). */
  abstract readonly authTokens: readonly string[];
  abstract readonly production: boolean;
  /** Largest accepted request body, in bytes. */
  abstract readonly bodyLimit: number;
  /** Folder for files the service keeps (the development token). */
  abstract readonly dataDir: string;
}
