import { InsufficientScopeException } from '../auth/admin-only.decorator';
import {
  ArgumentsHost,
  Catch,
  ExceptionFilter,
  HttpException,
  HttpStatus,
  Logger,
  UnauthorizedException,
} from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import { AppConfig } from '../config/app-config';
import { BEARER_REALM, InvalidCredentialsException } from '../auth/invalid-credentials.exception';
import { TooManyAuthFailuresException } from '../auth/auth-failure-limiter';
import { ErrorDto, MAX_ERROR_MESSAGE_LENGTH } from '../common/errors/error.dto';
import { ResourceConflictError } from '../common/errors/resource-conflict.error';
import { isClientAbort } from './connection-errors';
import { DatabaseErrorsMetrics } from './database-errors.metrics';
import { StorageError } from '../database/storage.error';
import { StorageTimeoutError } from '../database/storage-timeout.error';
import { StorageUnavailableError } from '../database/storage-unavailable.error';
import {
  DEFAULT_STORAGE_UNAVAILABLE,
  StorageUnavailableRouteConfig,
} from '../common/errors/storage-unavailable.decorator';
import { IncomingMessage } from 'node:http';

const INTERNAL_ERROR_MESSAGE = 'Internal server error';

/**
 * The one place that builds error bodies: every failure, whether thrown by a handler, a guard or
 * a pipe, or raised by Fastify (body errors, unknown route), leaves as `{ error, message }` with
 * `error` equal to the HTTP status. A store that is away (unreachable, or too slow) is a 503 in the
 * words of the route. Unexpected errors are logged with their stack and answered
 * with a generic 500, so no internals reach the client.
 */
@Catch()
export class AllExceptionsFilter implements ExceptionFilter {
  private readonly logger = new Logger(AllExceptionsFilter.name);

  constructor(
    private readonly adapterHost: HttpAdapterHost,
    private readonly config: AppConfig,
    private readonly metrics: DatabaseErrorsMetrics,
  ) {}

  catch(exception: unknown, host: ArgumentsHost): void {
    const request = host.switchToHttp().getRequest<FilteredRequest>();
    if (isClientAbort(exception, request)) {
      // The client went away mid-body: nothing was done, and there is no one to answer.
      this.logger.log(`Request ${request.id ?? '(no id)'} aborted by the client before its body was read`);
      return;
    }
    const body = this.storageFailureBody(exception, request) ?? this.toErrorBody(exception);
    if (body.error === HttpStatus.INTERNAL_SERVER_ERROR) {
      this.logger.error(`Request ${request.id ?? '(no id)'} failed: ${describeError(exception)}`);
    }
    const { httpAdapter } = this.adapterHost;
    const reply = host.switchToHttp().getResponse<unknown>();
    if (exception instanceof TooManyAuthFailuresException) {
      httpAdapter.setHeader(reply, 'Retry-After', String(exception.retryAfterSeconds));
    }
    if (exception instanceof UnauthorizedException) {
      const challenge = exception instanceof InvalidCredentialsException ? exception.challenge : BEARER_REALM;
      httpAdapter.setHeader(reply, 'WWW-Authenticate', challenge);
    }
    if (exception instanceof InsufficientScopeException)
      httpAdapter.setHeader(reply, 'WWW-Authenticate', exception.challenge);
    // A handler may have set another type (text/plain for /metrics) before it failed.
    httpAdapter.setHeader(reply, 'Content-Type', 'application/json; charset=utf-8');
    httpAdapter.reply(reply, withBoundedMessage(body), body.error);
  }

  /**
   * A store that is away is a 503 in the words of the route (`@WhenStorageUnavailable`); each storage
   * failure is counted by kind. Undefined for anything else.
   */
  private storageFailureBody(exception: unknown, request: FilteredRequest): ErrorDto | undefined {
    if (exception instanceof StorageError) {
      this.metrics.failed.inc({ kind: 'failure' });
      return undefined;
    }
    if (!(exception instanceof StorageUnavailableError)) return undefined;
    const timedOut = exception instanceof StorageTimeoutError;
    this.metrics.failed.inc({ kind: timedOut ? 'timeout' : 'unavailable' });
    const config = request.routeOptions?.config as StorageUnavailableRouteConfig | undefined;
    const messages = config?.storageUnavailable ?? DEFAULT_STORAGE_UNAVAILABLE;
    return { error: HttpStatus.SERVICE_UNAVAILABLE, message: timedOut ? messages.timeout : messages.unavailable };
  }

  private toErrorBody(exception: unknown): ErrorDto {
    // A repository's "this key is stored with other content": the client's 409, in its own words.
    if (exception instanceof ResourceConflictError) return { error: HttpStatus.CONFLICT, message: exception.message };
    if (!(exception instanceof HttpException)) {
      return { error: HttpStatus.INTERNAL_SERVER_ERROR, message: INTERNAL_ERROR_MESSAGE };
    }
    const status = exception.getStatus();
    switch (status) {
      // Nest hands Fastify's own body errors over as plain HttpExceptions; say what to change.
      case HttpStatus.PAYLOAD_TOO_LARGE:
        return { error: status, message: `Request body is larger than the limit of ${this.config.bodyLimit} bytes` };
      case HttpStatus.UNSUPPORTED_MEDIA_TYPE:
        return { error: status, message: 'Content-Type must be application/json' };
      case HttpStatus.SERVICE_UNAVAILABLE:
        return { error: status, message: messageOf(exception) };
      default:
        return status >= 500
          ? { error: HttpStatus.INTERNAL_SERVER_ERROR, message: INTERNAL_ERROR_MESSAGE }
          : { error: status, message: messageOf(exception) };
    }
  }
}

/** What the filter reads of a request: its id for the log, its route's config, whether it was aborted. */
interface FilteredRequest {
  id?: string;
  raw?: IncomingMessage;
  routeOptions?: { config?: unknown };
}

/** The stack of an unexpected error and of each error in its `cause` chain, for the log. */
function describeError(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const own = error.stack ?? `${error.name}: ${error.message}`;
  return error.cause === undefined ? own : `${own}\nCaused by: ${describeError(error.cause)}`;
}

function messageOf(exception: HttpException): string {
  const response = exception.getResponse();
  if (typeof response === 'string') return response;
  const { message } = response as { message?: unknown };
  if (Array.isArray(message)) return message.join('; ');
  return typeof message === 'string' ? message : exception.message;
}

/**
 * The message within the length the document declares: a validation message names every bad field,
 * which is far below it; anything longer is cut, with an ellipsis.
 */
function withBoundedMessage(body: ErrorDto): ErrorDto {
  if (body.message.length <= MAX_ERROR_MESSAGE_LENGTH) return body;
  return { ...body, message: `${body.message.slice(0, MAX_ERROR_MESSAGE_LENGTH - 1)}…` };
}
