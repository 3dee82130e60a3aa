import { AddressInfo } from 'node:net';
import { AppConfig } from '../config/app-config';
import { Database } from '../database/database';
import { API_VERSION } from '../common/api-version';
import { hostOf } from '../common/networks/host-of';

/** What the summary needs of the running app, besides the configuration. */
export interface RunningState {
  database: Database;
  address: AddressInfo | string | null;
  developmentToken: boolean;
}

/**
 * One line for the operator at start-up: what runs, on which store, migrated how far, listening
 * where, and which optional parts are on. Hosts only: no credential, token, secret or URL path.
 */
export function startupSummary(config: AppConfig, state: RunningState): string {
  const { database } = state;
  return [
    `Plant Store ${API_VERSION} on Node ${process.version}`,
    `store: ${database.kind === 'sqlite' ? 'SQLite' : 'PostgreSQL'} ${database.location}`,
    `migrations: ${database.migrations.map(({ name }) => name).join(', ') || 'none'}`,
    `listening on ${listeningOn(state.address)}`,
    `auth: ${authModes(config, state.developmentToken)}`,
    `rate limit: ${rateLimit(config)}`,
    `failed authentications: at most ${config.authFailuresPerMinute}/min per client address`,
    `counters: ${config.redisUrl === undefined ? 'in this instance' : `in Redis at ${hostOf(config.redisUrl)}`}`,
    `webhooks: ${webhooks(config)}`,
    `validation: ${config.validationPipe === 'stock' ? "Nest's ValidationPipe (VALIDATION_PIPE=stock)" : 'compiled rules'}`,
    `request log: ${requestLog(config)}`,
  ].join('; ');
}

function requestLog({ log }: AppConfig): string {
  if (log.requests === 'off') return 'off (LOG_REQUESTS=off)';
  if (log.requests === 'all') return 'every request';
  return `4xx, 5xx and requests slower than ${log.slowMs} ms (LOG_REQUESTS=failures)`;
}

function listeningOn(address: AddressInfo | string | null): string {
  if (address === null) return '(not listening)';
  if (typeof address === 'string') return address;
  const host = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  return `http://${host}:${address.port}`;
}

function authModes(config: AppConfig, developmentToken: boolean): string {
  const modes: string[] = [];
  if (developmentToken) modes.push('the development token');
  else if (config.authTokens.length > 0) modes.push(`${config.authTokens.length} static token(s)`);
  if (config.jwt !== undefined) {
    modes.push(
      config.jwt.jwksUrl !== undefined ? `JWTs (keys from ${hostOf(config.jwt.jwksUrl)})` : 'JWTs (a configured key)',
    );
  }
  return modes.join(' and ');
}

function rateLimit(config: AppConfig): string {
  return config.rateLimit === undefined ? 'off' : `${config.rateLimit.perMinute}/min per principal`;
}

function webhooks(config: AppConfig): string {
  const { urls } = config.webhooks.configured;
  const managed = `endpoints managed at /webhooks/endpoints (${config.adminTokens.length} admin token(s)${config.jwt ? ', or a JWT with scope webhooks:manage' : ''})`;
  return urls.length === 0 ? managed : `WEBHOOK_URLS to ${urls.map(hostOf).join(', ')}; ${managed}`;
}
