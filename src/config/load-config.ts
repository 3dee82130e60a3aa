import { resolve } from 'node:path';
import { plainToInstance } from 'class-transformer';
import { validateSync } from 'class-validator';
import { AppConfig, DatabaseConfig } from './app-config';
import { ConfigError } from './config.error';
import { EnvironmentVariables } from './environment-variables';

export const DEFAULT_DATABASE_URL = 'sqlite:./data/plants.db';
export const DEFAULT_BODY_LIMIT = 1024 * 1024;
// The characters RFC 6750 allows in a bearer token.
const TOKEN68 = /^[A-Za-z0-9\-._~+/]+=*$/;

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
  const authTokens = (vars.AUTH_TOKENS ?? '')
    .split(',')
    .map((token) => token.trim())
    .filter((token) => token !== '');
  if (!authTokens.every((token) => TOKEN68.test(token))) {
    throw new ConfigError(
      'Invalid configuration: AUTH_TOKENS must be a comma-separated list of bearer tokens (letters, digits and -._~+/=)',
    );
  }
  if (production && authTokens.length === 0) {
    throw new ConfigError('Invalid configuration: AUTH_TOKENS must list at least one token when NODE_ENV=production');
  }

  return {
    port: vars.PORT ?? 3000,
    host: vars.HOST ?? '0.0.0.0',
    database: databaseConfig(vars),
    authTokens,
    production,
    bodyLimit: vars.BODY_LIMIT ?? DEFAULT_BODY_LIMIT,
    dataDir: resolve(vars.DATA_DIR ?? './data'),
  };
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
  };
}
