import { isIP } from 'node:net';
import { TrustProxy } from './app-config';
import { ConfigError } from './config.error';
import { commaList } from './comma-list';

// The named ranges of proxy-addr, which Fastify uses for `trustProxy`.
const NAMED_RANGES = new Set(['loopback', 'linklocal', 'uniquelocal']);

/**
 * TRUST_PROXY: unset or `false` trusts no proxy (the client address is the peer's); a number trusts
 * that many hops of `X-Forwarded-For`; otherwise a comma-separated list of addresses, CIDR ranges or
 * proxy-addr's names (`loopback`, `linklocal`, `uniquelocal`). `true` (trust any sender) is refused:
 * any client could then pick the address the rate limit counts under.
 */
export function trustProxy(value: string | undefined): TrustProxy {
  if (value === undefined || value === 'false') return false;
  if (/^\d+$/.test(value)) {
    const hops = Number(value);
    if (hops >= 1 && hops <= 100) return hops;
  }
  const entries = commaList(value);
  if (entries.length > 0 && entries.every(isAddressOrRange)) return entries;
  throw new ConfigError(
    'Invalid configuration: TRUST_PROXY must be false, a hop count between 1 and 100, or a comma-separated list of proxy addresses or CIDR ranges',
  );
}

function isAddressOrRange(entry: string): boolean {
  if (NAMED_RANGES.has(entry)) return true;
  const [address, prefix, ...rest] = entry.split('/');
  const family = isIP(address);
  if (family === 0 || rest.length > 0) return false;
  if (prefix === undefined) return true;
  return /^\d{1,3}$/.test(prefix) && Number(prefix) <= (family === 4 ? 32 : 128);
}
