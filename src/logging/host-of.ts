/** The host (and port) of a URL, for logs: never the user, password, path or query, which may carry a secret. */
export function hostOf(url: string): string {
  try {
    return new URL(url).host;
  } catch {
    return '(invalid URL)';
  }
}
