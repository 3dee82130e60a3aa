import { applyDecorators, Type } from '@nestjs/common';
import { ApiOperation } from '@nestjs/swagger';
import {
  ApiErrorResponses,
  PROTECTED_OPERATION_ERRORS,
  READ_UNAVAILABLE,
} from '../errors/api-error-responses.decorator';
import { ApiPageResponse } from '../paging/api-page-response.decorator';
import { pascalName } from './resource-name';

/**
 * Everything a keyset list route (`GET /<resources>?limit=&after=`, read with `PageQueryDto` and answered
 * with `answerPage`) declares beside its `@Get()`, built from the list's `path` ("/soil-samples", whose
 * last segment names the resources): the operation (`listSoilSamples`, "List soil samples"), its 200
 * (an array of `item`, and the `Link: rel="next"` header), a bad query's 400, and a read's 503. Give the
 * handler no JSDoc comment: the Swagger plugin would blank the summary.
 */
export function ListOperation(path: string, item: Type): MethodDecorator {
  const plural = path.split('/').pop()!.replaceAll('-', ' ');
  return applyDecorators(
    ApiOperation({
      operationId: `list${pascalName(plural)}`,
      summary: `List ${plural}`,
      description:
        `Lists ${plural} in id order (negative ids first), a page at a time.\n\nWhen more ${plural} follow, the ` +
        '`Link` header holds the next page\'s URL (`rel="next"`); follow it\nuntil it is absent to walk the ' +
        'whole store. Every page costs the same however deep it is.',
    }),
    ApiPageResponse(item, path, `At most \`limit\` ${plural} with an id greater than \`after\`, ordered by id.`),
    ApiErrorResponses({
      ...PROTECTED_OPERATION_ERRORS,
      400: ['A query parameter is not valid.', 'limit must be a decimal integer from 1 to 1000'],
      503: READ_UNAVAILABLE,
    }),
  );
}
