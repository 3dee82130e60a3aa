import { isIP } from 'node:net';
import { BlockedNetworks } from './blocked-networks';

/** The rule for plain http in production, as every message about it says it ("url …", "each of WEBHOOK_URLS …"). */
export const HTTPS_RULE =
  'must be https when NODE_ENV=production (plain http only to an IP address inside WEBHOOK_ALLOWED_NETWORKS)';

/**
 * Why `url` breaks the production rule on plain http (`HTTPS_RULE`), or undefined when it keeps it:
 * signed payloads must not cross a network in clear, except to a receiver the operator opened on
 * purpose, named by its address (a name could resolve elsewhere). Checked when an endpoint is saved,
 * for WEBHOOK_URLS at start-up, for stored endpoints at start-up (a warning), and when a send connects.
 */
export function plainHttpProblem(url: string, httpsOnly: boolean, networks: BlockedNetworks): string | undefined {
  if (!httpsOnly) return undefined;
  const { protocol, hostname } = new URL(url);
  if (protocol !== 'http:') return undefined;
  const host = hostname.replace(/^\[|\]$/g, '');
  return isIP(host) !== 0 && networks.opens(host) ? undefined : HTTPS_RULE;
}
