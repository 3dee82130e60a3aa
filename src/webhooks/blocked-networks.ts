import { lookup as dnsLookup, LookupAddress, LookupOptions } from 'node:dns';
import { BlockList, isIP } from 'node:net';

/** The error of a connection refused because of WEBHOOK_BLOCKED_NETWORKS. */
export class BlockedAddressError extends Error {
  readonly code = 'EBLOCKEDADDRESS';

  constructor(host: string) {
    super(`${host} is in WEBHOOK_BLOCKED_NETWORKS; not connecting`);
  }
}

type LookupCallback = (error: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void;
type LookupAll = (
  host: string,
  options: { all: true },
  callback: (error: Error | null, found: LookupAddress[]) => void,
) => void;

/** How long saving an endpoint waits on DNS for its check; past it the name is treated as not resolving yet. */
export const SAVE_CHECK_LOOKUP_TIMEOUT_MS = 3000;

/**
 * The ranges no endpoint may reach (WEBHOOK_BLOCKED_NETWORKS; link-local and cloud metadata by
 * default). Checked when an endpoint is saved (`problemWith`) and when a send connects (`lookup`,
 * given to the HTTP client, so what counts is what the name resolves to then, not at save time).
 */
export class BlockedNetworks {
  private readonly list = new BlockList();

  constructor(
    cidrs: readonly string[],
    /** For the save-time check only (tests give one that never answers). */
    private readonly lookupAll: LookupAll = dnsLookup,
    private readonly saveCheckTimeoutMs = SAVE_CHECK_LOOKUP_TIMEOUT_MS,
  ) {
    for (const cidr of cidrs) {
      const [address, prefix] = cidr.split('/');
      this.list.addSubnet(address, Number(prefix), isIP(address) === 4 ? 'ipv4' : 'ipv6');
    }
  }

  /** Whether an IP address (v4, v6, or v4 mapped into v6) is in a blocked range. */
  blocks(address: string): boolean {
    const bare = address.startsWith('[') ? address.slice(1, -1) : address;
    const family = isIP(bare);
    if (family === 0) return false;
    if (family === 4) return this.list.check(bare, 'ipv4');
    const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(bare)?.[1];
    return this.list.check(bare, 'ipv6') || (mapped !== undefined && this.list.check(mapped, 'ipv4'));
  }

  /** Why a URL may not be saved, or undefined: its host is, or resolves now to, a blocked address. */
  async problemWith(url: string): Promise<string | undefined> {
    const host = new URL(url).hostname;
    if (isIP(host.replace(/^\[|\]$/g, '')) !== 0) {
      return this.blocks(host) ? 'url must not point into WEBHOOK_BLOCKED_NETWORKS' : undefined;
    }
    // A name that does not resolve yet, or not within the timeout (a hung resolver must not hang the
    // request), may be saved: the send checks it again when it connects.
    let timer: NodeJS.Timeout | undefined;
    const addresses = await new Promise<LookupAddress[]>((resolve) => {
      timer = setTimeout(() => resolve([]), this.saveCheckTimeoutMs);
      this.lookupAll(host, { all: true }, (error, found) => resolve(error ? [] : found));
    }).finally(() => clearTimeout(timer));
    return addresses.some(({ address }) => this.blocks(address))
      ? `url must not resolve into WEBHOOK_BLOCKED_NETWORKS (${host} does)`
      : undefined;
  }

  /** A `dns.lookup` for the HTTP client's connections: fails when the name resolves to any blocked address. */
  readonly lookup = (hostname: string, options: LookupOptions, callback: LookupCallback): void => {
    dnsLookup(hostname, { ...options, all: true }, (error, addresses) => {
      if (error) return callback(error, []);
      if (addresses.some(({ address }) => this.blocks(address))) return callback(new BlockedAddressError(hostname), []);
      if (options.all) return callback(null, addresses);
      callback(null, addresses[0].address, addresses[0].family);
    });
  };
}
