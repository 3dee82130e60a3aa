import { FastifyReply } from 'fastify';

/** What a store reads for one page of a list keyed on an int64 id: at most `limit` items whose id is greater than `after`. */
export interface PageQuery {
  readonly limit: number;
  /** Exclusive; from the smallest id when undefined. */
  readonly after?: bigint;
}

/** One page of a keyset list, and the key to continue after when more may follow. */
export interface Page<T, K> {
  readonly items: T[];
  readonly next?: K;
}

/**
 * A page of at most `limit` items out of `fetched`, which the store read with `limit + 1`: the
 * extra one says whether another page exists, without a count. `next` is the key of the last item
 * kept, set only when more follow.
 */
export function pageOf<T, K>(fetched: T[], limit: number, keyOf: (item: T) => K): Page<T, K> {
  if (fetched.length <= limit) return { items: fetched };
  const items = fetched.slice(0, limit);
  return { items, next: keyOf(items[limit - 1]) };
}

/**
 * The `Link` header of a page that has a next one (RFC 8288): a reference relative to the request
 * URL, `</plants?limit=100&after=10>; rel="next"`. `path` is the list's own path, `query` the
 * parameters of the next page, in order.
 */
export function nextPageLink(path: string, query: Record<string, string | number | bigint>): string {
  const search = Object.entries(query)
    .map(([name, value]) => `${name}=${encodeURIComponent(String(value))}`)
    .join('&');
  return `<${path}?${search}>; rel="next"`;
}

/**
 * A list handler's answer (`GET <path>?limit=&after=`): the items of `page`, with the `Link` header of
 * the next page on `reply` while more follow, as `ApiPageResponse` documents it.
 */
export function answerPage<T>(reply: FastifyReply, path: string, limit: number, page: Page<T, bigint>): T[] {
  if (page.next !== undefined) void reply.header('link', nextPageLink(path, { limit, after: page.next }));
  return page.items;
}
