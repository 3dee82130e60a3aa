import { applyDecorators, Type } from '@nestjs/common';
import { ApiOkResponse, ApiOperation } from '@nestjs/swagger';
import {
  ApiErrorResponses,
  PROTECTED_OPERATION_ERRORS,
  READ_UNAVAILABLE,
} from '../errors/api-error-responses.decorator';
import { ApiInt64Param } from '../int64/api-int64-param.decorator';
import { notFoundMessage, pascalName, ResourceNameOptions, withArticle } from './resource-name';

/**
 * The failures of every operation on one resource by its path id (`/<resources>/{id}`, read by
 * `@Param('id', ParseInt64Pipe)`), with the messages it answers: a bad id (400), no such resource
 * (404, `notFoundMessage`), an id too long for the router (414). Spread them into
 * `@ApiErrorResponses` for a by-id operation of your own, and add its 503 (and 413/415 if it reads a body).
 */
export function byIdErrors(name: string) {
  return {
    ...PROTECTED_OPERATION_ERRORS,
    400: ['The id in the path is not a decimal int64.', 'id must be a decimal integer in the int64 range'],
    404: [`No ${name} has this id.`, notFoundMessage(name, 10)],
    414: 'The id in the path is longer than 100 characters (an int64 has at most 20).',
  } satisfies Record<number, string | [string, string]>;
}

export interface GetByIdOperationOptions extends Pick<ResourceNameOptions, 'article'> {
  /** The operation's description, in place of "Reads one <name> by its id." */
  readonly description?: string;
}

/**
 * Everything a get-by-id route (`GET /<resources>/{id}`) declares beside its `@Get(':id')`, built from
 * the resource's `name` ("plant"): the operation (`getPlant`, "Get a plant"), the int64 `id` path
 * parameter, its 200 with `response`, and every failure (`byIdErrors`, and a read's 503). Give the
 * handler no JSDoc comment (use `options.description`): the Swagger plugin would blank the summary.
 */
export function GetByIdOperation(name: string, response: Type, options: GetByIdOperationOptions = {}): MethodDecorator {
  return applyDecorators(
    ApiOperation({
      operationId: `get${pascalName(name)}`,
      summary: `Get ${withArticle(name, options)}`,
      description: options.description ?? `Reads one ${name} by its id.`,
    }),
    ApiInt64Param('id', `The id of the ${name}`),
    ApiOkResponse({ type: response, description: `The ${name} with this id.` }),
    ApiErrorResponses({ ...byIdErrors(name), 503: READ_UNAVAILABLE }),
  );
}
