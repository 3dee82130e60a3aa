import { applyDecorators } from '@nestjs/common';
import { ApiNoContentResponse, ApiOperation } from '@nestjs/swagger';
import { ApiErrorResponses, IDENTITY_PROVIDER_UNAVAILABLE } from '../errors/api-error-responses.decorator';
import { StorageUnavailableMessages, WhenStorageUnavailable } from '../errors/storage-unavailable.decorator';
import { ApiInt64Param } from '../int64/api-int64-param.decorator';
import { byIdErrors } from './get-by-id-operation.decorator';
import { pascalName, ResourceNameOptions, withArticle } from './resource-name';

/** What a client of a delete is told with a 503 (`@WhenStorageUnavailable`): after a timeout, a 404 to the same request means it was deleted. */
export function deleteUnavailableMessages(name: string): StorageUnavailableMessages {
  return {
    timeout: `The database did not answer in time; the ${name} may or may not be deleted: send the same request again (404 then means it was)`,
    unavailable: `The database is unavailable; the ${name} was not deleted, retry shortly`,
  };
}

/**
 * Everything a delete route (`DELETE /<resources>/{id}`, read by `@Param('id', ParseInt64Pipe)`: 204, or
 * 404 when nothing has the id) declares beside its `@Delete(':id')` and `@HttpCode(HttpStatus.NO_CONTENT)`,
 * built from the resource's `name` ("plant"): the operation (`deletePlant`, "Delete a plant"), the int64
 * `id` path parameter, its 204, every failure (`byIdErrors`, a body's 413 and 415, the 503 that says
 * whether it was deleted), and the 503 messages it answers.
 *
 * Keep `@HttpCode(HttpStatus.NO_CONTENT)` on the handler itself: the Swagger plugin reads the status from
 * there (without it, it documents a 200 too). Give the handler no JSDoc comment: the plugin would blank
 * the summary.
 */
export function DeleteOperation(name: string, options: Pick<ResourceNameOptions, 'article'> = {}): MethodDecorator {
  const unavailable = deleteUnavailableMessages(name);
  return applyDecorators(
    ApiOperation({
      operationId: `delete${pascalName(name)}`,
      summary: `Delete ${withArticle(name, options)}`,
      description: `Deletes one ${name}. Creating its id again afterwards is a new ${name}, not a replay.`,
    }),
    ApiInt64Param('id', `The id of the ${name}`),
    ApiNoContentResponse({ description: `The ${name} existed and is now deleted.` }),
    ApiErrorResponses({
      ...byIdErrors(name),
      413: 'A body was sent (none is needed, and one is ignored) and it is larger than BODY_LIMIT.',
      415: 'A body was sent (none is needed, and one is ignored) and it is not application/json.',
      503: [
        `The database is unreachable (nothing was deleted) or did not answer within DATABASE_QUERY_TIMEOUT_MS ` +
          '(it may have been deleted). Send the same request again: a 404 then means it was. ' +
          IDENTITY_PROVIDER_UNAVAILABLE,
        unavailable.unavailable,
      ],
    }),
    WhenStorageUnavailable(unavailable),
  );
}
