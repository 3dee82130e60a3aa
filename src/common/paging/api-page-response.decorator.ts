import { applyDecorators, Type } from '@nestjs/common';
import { ApiExtraModels, ApiOkResponse, getSchemaPath } from '@nestjs/swagger';
import { MAX_PAGE_LIMIT } from './page-query.dto';

/**
 * The schema of a `Link: rel="next"` header as `nextPageLink` writes it. Its length: a list's path
 * (an id in it is at most a path parameter's 100 characters) and three short query parameters; the
 * longest, a delivery log's, is under 200.
 */
export const PAGE_LINK_SCHEMA = { type: 'string', maxLength: 512, pattern: '^<[^<>]+>; rel="next"$' } as const;

/** A page of `item`: at most MAX_PAGE_LIMIT of them (the largest `limit`). */
export const pageSchema = (item: Type) =>
  ({ type: 'array', items: { $ref: getSchemaPath(item) }, maxItems: MAX_PAGE_LIMIT }) as const;

/**
 * Documents the 200 of a keyset list: an array of `item`, and the `Link: rel="next"` header that
 * `nextPageLink` writes while more items follow. `path` is the list's own path, for the example.
 */
export const ApiPageResponse = (item: Type, path: string, description: string): MethodDecorator =>
  applyDecorators(
    ApiExtraModels(item),
    ApiOkResponse({
      schema: pageSchema(item),
      description,
      headers: {
        Link: {
          description:
            `Present only when more items follow: \`<${path}?limit=<limit>&after=<last id>>; rel="next"\` (RFC 8288), ` +
            'relative to the request URL.',
          schema: { ...PAGE_LINK_SCHEMA, example: `<${path}?limit=100&after=10>; rel="next"` },
        },
      },
    }),
  );
