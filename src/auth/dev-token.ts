import { randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

export const DEV_TOKEN_FILE = 'dev-token';

/**
 * Returns the development token kept in `dataDir`, making it on first use, so a developer's
 * token survives restarts. Only used when no `AUTH_TOKENS` are configured outside production.
 */
export function loadOrCreateDevToken(dataDir: string): { token: string; created: boolean } {
  const file = join(dataDir, DEV_TOKEN_FILE);
  try {
    const token = readFileSync(file, 'utf8').trim();
    if (token !== '') return { token, created: false };
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
  mkdirSync(dataDir, { recursive: true });
  const token = `dev_${randomBytes(24).toString('base64url')}`;
  try {
    // 'wx': when two processes start at once, the second keeps the first one's token.
    writeFileSync(file, `${token}\n`, { mode: 0o600, flag: 'wx' });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') return loadOrCreateDevToken(dataDir);
    throw error;
  }
  return { token, created: true };
}
