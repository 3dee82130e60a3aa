import { Type } from '@nestjs/common';
import { ApiOkResponse } from '@nestjs/swagger';

/**
 * Documents the 200 of a keyset list: an array of `item`, and the `Link: rel="next"` header that
 * `nextPageLink` writes while more items follow. `path` is the list's own path, for the example.
 */
export const ApiPageResponse = (item: Type, path: string, description: string): MethodDecorator =>
  ApiOkResponse({
    type: [item],
    description,
    headers: {
      Link: {
        description:
          `Present only when more items follow: \`<${path}?limit=<limit>&after=<last id>>; rel="next"\` (RFC 8288), ` +
          'relative to the request URL.',
        schema: { type: 'string', example: `<${path}?limit=100&after=10>; rel="next"` },
      },
    },
  });
