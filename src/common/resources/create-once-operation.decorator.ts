import { applyDecorators, Type } from '@nestjs/common';
import { ApiOkResponse, ApiOperation } from '@nestjs/swagger';
import {
  ApiErrorResponses,
  IDENTITY_PROVIDER_UNAVAILABLE,
  PROTECTED_OPERATION_ERRORS,
} from '../errors/api-error-responses.decorator';
import { StorageUnavailableMessages, WhenStorageUnavailable } from '../errors/storage-unavailable.decorator';
import { conflictMessage, pascalName, ResourceNameOptions, withArticle } from './resource-name';

export interface CreateOnceOperationOptions extends ResourceNameOptions {
  /**
   * The example message of the 400. By default the id's ("id must be an integer in the int64 range"),
   * which every create-once body answers for a bad id whatever its other fields, so it never goes
   * stale; one naming your fields must be kept in step with them by hand.
   */
  readonly invalidExample?: string;
  /** The operation's description, in place of the one built from the name. */
  readonly description?: string;
}

/** What a client of a create is told with a 503 (`@WhenStorageUnavailable`): a replay is safe. */
export function createUnavailableMessages(name: string): StorageUnavailableMessages {
  return {
    timeout: `The database did not answer in time; the ${name} may or may not be stored: send the same request again (a replay is safe)`,
    unavailable: `The database is unavailable; the ${name} was not stored, retry shortly`,
  };
}

/**
 * Everything a create-once route (`POST /<resources>`: replay 200, conflict 409) declares beside its
 * `@Post()` and `@HttpCode(HttpStatus.OK)`, built from the resource's `name` ("plant"): the operation
 * (`createPlant`, "Create a plant"), its 200 with `response`, every failure with its Error example
 * (400 naming the `New<Name>` schema, 409 with `conflictMessage`, 401, 408, 413, 415, 429, 431,
 * 500, 503), and the 503 messages it answers.
 *
 * Keep `@HttpCode(HttpStatus.OK)` on the handler itself: the Swagger plugin reads the status from
 * there. Give the handler no JSDoc comment (word the description with `options.description`): the
 * plugin turns one into an `@ApiOperation` that runs after this and blanks the summary.
 */
export function CreateOnceOperation(
  name: string,
  response: Type,
  options: CreateOnceOperationOptions = {},
): MethodDecorator {
  const unavailable = createUnavailableMessages(name);
  const differs = options.differs ?? 'different content';
  return applyDecorators(
    ApiOperation({
      operationId: `create${pascalName(name)}`,
      summary: `Create ${withArticle(name, options)}`,
      description:
        options.description ??
        `Creates ${withArticle(name, options)}.\n\nA 200 means the ${name} is durably stored. Sending the same ${name} ` +
          `again (the same id and content) is a safe retry and returns it again; the same id with ${differs} is a 409.`,
    }),
    ApiOkResponse({ type: response, description: `The ${name} is stored (or was already, identically).` }),
    ApiErrorResponses({
      ...PROTECTED_OPERATION_ERRORS,
      400: [
        'The body is missing, is not JSON (or is nested deeper than 64 levels), or is not a valid ' +
          `New${pascalName(name)}.`,
        options.invalidExample ?? 'id must be an integer in the int64 range',
      ],
      409: [`The id is already stored with ${differs}; nothing was changed.`, conflictMessage(name, 10, options)],
      413: 'The body is larger than the configured limit (BODY_LIMIT, 1 MiB by default).',
      415: 'The body is not application/json.',
      503: [
        `The database is unreachable (the ${name} was not stored) or did not answer within DATABASE_QUERY_TIMEOUT_MS ` +
          '(it may have been). Either way, send the same request again after a short wait: a replay is safe. ' +
          IDENTITY_PROVIDER_UNAVAILABLE,
        unavailable.unavailable,
      ],
    }),
    WhenStorageUnavailable(unavailable),
  );
}
