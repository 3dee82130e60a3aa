import { isIPv4, isIPv6 } from 'node:net';
import ipaddr from 'ipaddr.js';

/**
 * What failed authentications are counted under, for a client address as TRUST_PROXY resolves it:
 * an IPv4 address as itself; an IPv6 address by its /64, the block one site or host is given (one
 * client can speak from all 2^64 of its addresses); an IPv4-mapped one (`::ffff:a.b.c.d`, how a
 * dual-stack socket shows an IPv4 peer) as its IPv4 address. Anything else (no address, or a
 * forwarded value that is not one) counts as one unknown client. So a key is short whatever the
 * client sends.
 */
export function clientNetwork(address: string | undefined): string {
  if (address === undefined) return 'unknown';
  if (isIPv4(address)) return address;
  if (!isIPv6(address)) return 'unknown';
  const parsed = ipaddr.IPv6.parse(address);
  if (parsed.isIPv4MappedAddress()) return parsed.toIPv4Address().toString();
  return `${parsed.parts
    .slice(0, 4)
    .map((part) => part.toString(16))
    .join(':')}::/64`;
}
