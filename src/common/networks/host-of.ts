/** The host (and port) of a URL, for logs: never the user, password, path or query, which may carry a secret. */
export function hostOf(url: string): string {
  try {
    return new URL(url).host;
  } catch {
    return '(invalid URL)';
  }
}

/**
 * The scheme, host and port of a URL (`https://hooks.example.com:8443`), for logs and telemetry:
 * never the user, password, path or query, which may carry a secret (a Slack-style webhook URL holds
 * its credential in the path). The port is shown only when it is not the scheme's default.
 */
export function originOf(url: string): string {
  try {
    const { protocol, host } = new URL(url);
    return `${protocol}//${host}`;
  } catch {
    return '(invalid URL)';
  }
}

/**
 * `text` (an error message, say) with every appearance of `url`, or of its path and query, replaced:
 * the URL by its origin, its path or query alone by `…`. For messages of libraries that may quote the
 * URL they were given.
 */
export function withoutUrl(text: string, url: string): string {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return text.split(url).join('(invalid URL)');
  }
  const origin = originOf(url);
  const whole = [url, parsed.href];
  // The parts that may carry a secret, longest first (so the path with its query goes before the path alone).
  const parts = [
    `${parsed.pathname}${parsed.search}`,
    parsed.pathname,
    parsed.search,
    decodeOr(parsed.pathname),
    parsed.search.slice(1),
  ]
    .filter((part) => part.length > 1)
    .sort((a, b) => b.length - a.length);
  let scrubbed = text;
  for (const full of whole) scrubbed = scrubbed.split(full).join(origin);
  for (const part of parts) scrubbed = scrubbed.split(part).join('…');
  return scrubbed;
}

function decodeOr(path: string): string {
  try {
    return decodeURIComponent(path);
  } catch {
    return path;
  }
}

/** The span attributes of a URL's origin (OpenTelemetry's `url.scheme`, `server.address`, `server.port`); none for an invalid URL. */
export function originAttributes(url: string): Record<string, string | number> {
  try {
    const { protocol, hostname, port } = new URL(url);
    const scheme = protocol.slice(0, -1);
    const defaultPort = scheme === 'https' ? 443 : scheme === 'http' ? 80 : undefined;
    const number = port === '' ? defaultPort : Number(port);
    return {
      'url.scheme': scheme,
      'server.address': hostname.replace(/^\[|\]$/g, ''),
      ...(number === undefined ? {} : { 'server.port': number }),
    };
  } catch {
    return {};
  }
}
