import { lookup as dnsLookup, LookupAddress, LookupOptions } from 'node:dns';
import { isIP } from 'node:net';
import ipaddr from 'ipaddr.js';

type Address = ipaddr.IPv4 | ipaddr.IPv6;
type Range = [Address, number];

/** What a special-purpose address is, in messages. */
const SPECIAL_PURPOSE = 'a private or special-purpose address';
/** What an address of a range WEBHOOK_BLOCKED_NETWORKS adds is, in messages. */
const ADDED = 'an address in WEBHOOK_BLOCKED_NETWORKS';

/**
 * The special-purpose ranges come from ipaddr.js (`range()`: anything but `unicast` is special). These
 * are what its 2.5.0 lacks, or calls `unicast`.
 */
const NOT_IN_IPADDR: readonly Range[] = [
  // Azure's host address (DNS, DHCP, health probes, the instance's metadata), a public address.
  ipaddr.parseCIDR('168.63.129.16/32'),
  // IPv4-compatible addresses (deprecated, RFC 4291 2.5.5.1), such as ::7f00:1 for 127.0.0.1.
  ipaddr.parseCIDR('::/96'),
  // The dummy IPv6 prefix (RFC 9780), in the IANA registry since 2025.
  ipaddr.parseCIDR('100:0:0:1::/64'),
];

// The NAT64 well-known prefix (RFC 6052). ipaddr.js names it `rfc6052` together with 64:ff9b:1::/48,
// the local-use prefix (RFC 8215), which stays blocked.
const NAT64 = ipaddr.parseCIDR('64:ff9b::/96');

/**
 * The IPv4 address an IPv6 address carries, for the three ranges judged by it: IPv4-mapped
 * ::ffff:0:0/96, NAT64 64:ff9b::/96 (the last 32 bits) and 6to4 2002::/16 (the 32 bits after 2002:).
 * Teredo (2001::/32) carries one too, obfuscated, and is blocked for its range instead.
 */
function carriedIPv4(address: ipaddr.IPv6): ipaddr.IPv4 | undefined {
  const parts = address.parts;
  const bytes = (high: number, low: number) => [high >> 8, high & 0xff, low >> 8, low & 0xff];
  if (address.isIPv4MappedAddress() || address.match(NAT64)) return new ipaddr.IPv4(bytes(parts[6], parts[7]));
  if (address.range() === '6to4') return new ipaddr.IPv4(bytes(parts[1], parts[2]));
  return undefined;
}

/** An address in a special-purpose range, except the three judged by the IPv4 address they carry. */
function isSpecialPurpose(address: Address): boolean {
  if (NOT_IN_IPADDR.some((range) => inRange(address, range))) return true;
  if (address.kind() === 'ipv4') return address.range() !== 'unicast';
  const ipv6 = address as ipaddr.IPv6;
  return ipv6.range() !== 'unicast' && carriedIPv4(ipv6) === undefined;
}

function inRange(address: Address, [network, bits]: Range): boolean {
  return address.kind() === network.kind() && address.match(network, bits);
}

/** The address of a literal host or a DNS answer (`[…]` and a `%zone` allowed), or undefined when it is not one. */
function parseAddress(value: string): Address | undefined {
  const bare = (value.startsWith('[') && value.endsWith(']') ? value.slice(1, -1) : value).replace(/%.*$/, '');
  const family = isIP(bare);
  if (family === 0) return undefined;
  if (family === 4) return ipaddr.IPv4.parse(bare);
  // IPv6 ending in a dotted quad, as getaddrinfo writes ::ffff:0:0/96 and ::/96: in hex first, since
  // ipaddr.js reads any `::a.b.c.d` as IPv4-mapped (::ffff:a.b.c.d), which would hide ::/96.
  return ipaddr.IPv6.parse(
    bare.replace(/(\d+)\.(\d+)\.(\d+)\.(\d+)$/, (_, a: string, b: string, c: string, d: string) =>
      [(Number(a) << 8) | Number(b), (Number(c) << 8) | Number(d)].map((group) => group.toString(16)).join(':'),
    ),
  );
}

/** `address/prefix`, as the configuration has validated it. */
function parseRange(cidr: string): Range {
  const [address, prefix] = cidr.split('/');
  const parsed = parseAddress(address);
  if (parsed === undefined || !/^[0-9]{1,3}$/.test(prefix ?? '')) throw new Error(`not a CIDR range: ${cidr}`);
  return [parsed, Number(prefix)];
}

/** The error of a send whose host is (an IP literal), or resolves to, a blocked address. */
export class BlockedAddressError extends Error {
  readonly code = 'EBLOCKEDADDRESS';

  constructor(host: string, resolved = false) {
    super(
      `${host} ${resolved ? 'resolves to' : 'is'} a blocked address; not connecting ` +
        '(an operator can open its range with WEBHOOK_ALLOWED_NETWORKS)',
    );
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
 * The addresses no endpoint may reach: every special-purpose range, always, and the ranges
 * WEBHOOK_BLOCKED_NETWORKS adds, less the ranges WEBHOOK_ALLOWED_NETWORKS opens inside them (the only
 * way to open one). An IPv6 address that carries an IPv4 one (mapped, NAT64, 6to4) is judged by that
 * IPv4 address: only it can be opened (an allowed `64:ff9b::/96` does not open 64:ff9b::a9fe:a9fe,
 * 169.254.169.254 through NAT64), while a blocked range blocks it in either form.
 * Checked when an endpoint is saved (`problemWith`) and when a send connects (`lookup`, given to the
 * HTTP client, so what counts is what the name resolves to then, not at save time).
 */
export class BlockedNetworks {
  private readonly addedRanges: readonly Range[];
  private readonly allowedRanges: readonly Range[];

  constructor(
    /** WEBHOOK_BLOCKED_NETWORKS: ranges blocked besides the special-purpose ones, which always are. */
    added: readonly string[] = [],
    /** WEBHOOK_ALLOWED_NETWORKS: ranges opened inside the blocked ones. */
    allowed: readonly string[] = [],
    /** For the save-time check only (tests give one that never answers). */
    private readonly lookupAll: LookupAll = dnsLookup,
    private readonly saveCheckTimeoutMs = SAVE_CHECK_LOOKUP_TIMEOUT_MS,
  ) {
    this.addedRanges = added.map(parseRange);
    this.allowedRanges = allowed.map(parseRange);
  }

  /**
   * Whether an IP address (v4, or v6 with or without brackets and zone) is blocked: it, or the IPv4
   * address it carries, is in a blocked range, and it is not opened (`opens`). Anything else is not.
   */
  blocks(address: string): boolean {
    return this.blockedAs(address) !== undefined;
  }

  /**
   * What a blocked address is, for messages ("a private or special-purpose address", or "an address
   * in WEBHOOK_BLOCKED_NETWORKS"); undefined when it is not blocked, or not an IP address.
   */
  blockedAs(address: string): string | undefined {
    const forms = formsOf(address);
    if (forms.length === 0 || this.opens(address)) return undefined;
    if (forms.some(isSpecialPurpose)) return SPECIAL_PURPOSE;
    return forms.some((form) => this.addedRanges.some((range) => inRange(form, range))) ? ADDED : undefined;
  }

  /**
   * Whether WEBHOOK_ALLOWED_NETWORKS holds an IP address; for one that carries an IPv4 address, whether
   * it holds that IPv4 address (the IPv6 range it is written in opens nothing).
   */
  opens(address: string): boolean {
    const judged = formsOf(address).at(-1);
    return judged !== undefined && this.allowedRanges.some((range) => inRange(judged, range));
  }

  /** Why a URL may not be saved, or undefined: its host is, or resolves now to, a blocked address. */
  async problemWith(url: string): Promise<string | undefined> {
    const host = new URL(url).hostname;
    const open = 'an operator can open its range with WEBHOOK_ALLOWED_NETWORKS';
    if (parseAddress(host) !== undefined) {
      const what = this.blockedAs(host);
      return what === undefined ? undefined : `url must not point to ${what}; ${open}`;
    }
    const what = (await this.resolve(host)).map((address) => this.blockedAs(address)).find(Boolean);
    return what === undefined ? undefined : `url must not resolve to ${what} (${host} does); ${open}`;
  }

  /**
   * What a name resolves to now, waiting at most the save-time timeout (a hung resolver must not hang
   * a request); none when it does not resolve (yet), or not in time: the send checks it again.
   */
  async resolve(host: string): Promise<string[]> {
    let timer: NodeJS.Timeout | undefined;
    const found = await new Promise<LookupAddress[]>((resolve) => {
      timer = setTimeout(() => resolve([]), this.saveCheckTimeoutMs).unref();
      this.lookupAll(host, { all: true }, (error, addresses) => resolve(error ? [] : addresses));
    }).finally(() => clearTimeout(timer));
    return found.map(({ address }) => address);
  }

  /** A `dns.lookup` for the HTTP client's connections: fails when the name resolves to any blocked address. */
  readonly lookup = (hostname: string, options: LookupOptions, callback: LookupCallback): void => {
    dnsLookup(hostname, { ...options, all: true }, (error, addresses) => {
      if (error) return callback(error, []);
      if (addresses.some(({ address }) => this.blocks(address))) {
        return callback(new BlockedAddressError(hostname, true), []);
      }
      if (options.all) return callback(null, addresses);
      callback(null, addresses[0].address, addresses[0].family);
    });
  };
}

/** An IP address, and the IPv4 address it carries if any; none when it is not an IP address. */
function formsOf(address: string): Address[] {
  const parsed = parseAddress(address);
  if (parsed === undefined) return [];
  const carried = parsed.kind() === 'ipv6' ? carriedIPv4(parsed as ipaddr.IPv6) : undefined;
  return carried === undefined ? [parsed] : [parsed, carried];
}
