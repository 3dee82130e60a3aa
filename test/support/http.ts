import { TEST_TOKEN } from './test-app';

export interface HttpResult {
  status: number;
  headers: Headers;
  /** The body parsed as JSON (undefined when it is not JSON). */
  body: unknown;
  text: string;
}

export interface RequestOptions {
  method?: string;
  headers?: Record<string, string>;
  /** A string is sent as is; anything else is JSON.stringify-ed. */
  body?: unknown;
  /** false sends no Authorization header; a string sends it verbatim. */
  auth?: string | false;
}

/** One real HTTP request, with the test token and a JSON content type unless told otherwise. */
export async function request(url: string, options: RequestOptions = {}): Promise<HttpResult> {
  const headers: Record<string, string> = {};
  if (options.auth !== false) headers.authorization = options.auth ?? `Bearer ${TEST_TOKEN}`;
  if (options.body !== undefined) headers['content-type'] = 'application/json';
  Object.assign(headers, options.headers);
  const response = await fetch(url, {
    method: options.method ?? 'POST',
    headers,
    body: options.body === undefined || typeof options.body === 'string' ? options.body : JSON.stringify(options.body),
  });
  const text = await response.text();
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    body = undefined;
  }
  return { status: response.status, headers: response.headers, body, text };
}

/** The URL a `Link: <…>; rel="next"` header points to, resolved against the page's URL. */
export function linkToNext(link: string | null, pageUrl: string): string | undefined {
  const target = link === null ? undefined : /^<([^>]*)>;\s*rel="next"$/.exec(link)?.[1];
  return target === undefined ? undefined : new URL(target, pageUrl).toString();
}
