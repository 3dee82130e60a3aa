import { STATUS_CODES } from 'node:http';
import { Socket } from 'node:net';
import { HttpException, Logger } from '@nestjs/common';
import { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { API_SECURITY_HEADERS } from '../http/security-headers';
import { ErrorDto } from '../common/errors/error.dto';

/** Node's limit on the request line and headers together (`http.maxHeaderSize`); the service keeps it. */
export const MAX_HEADER_BYTES = 16 * 1024;
/** Fastify's limit on one path parameter; an int64 id needs 20 characters. */
export const MAX_PARAM_LENGTH = 100;

/**
 * These answers never reach the request log (there is no request, or no route), so each gets a line
 * here: the status, why, and what is known of the request (never a header).
 */
const logger = new Logger('Requests');

/** Every answer here is an Error body with the API's security headers, also those written on a bare socket. */
const ERROR_HEADERS = { ...API_SECURITY_HEADERS, 'content-type': 'application/json; charset=utf-8' };

/**
 * Fastify's `clientErrorHandler`: what Node could not parse as a request (so neither Fastify nor
 * Nest ever sees one) is answered on the socket as an Error body, then the connection is closed:
 * 431 for a request line and headers past the limit, 408 for a request not received within
 * REQUEST_TIMEOUT_MS, 400 for anything else malformed. A reset connection gets nothing.
 */
export function clientErrorHandler(requestTimeoutMs: number): (error: NodeJS.ErrnoException, socket: Socket) => void {
  return (error, socket) => {
    if (error.code === 'ECONNRESET' || socket.destroyed) return;
    // Its write side is closed: the connection carried its last answer and is being drained
    // (http/early-answer-drain.ts); REQUEST_TIMEOUT_MS then ends the drain, with no second answer.
    if (!socket.writable) return void socket.destroy();
    const body = connectionErrorBody(error.code, requestTimeoutMs);
    logger.log(
      `Answered ${body.error} before any route, from ${socket.remoteAddress ?? 'an unknown address'}: ${body.message}`,
    );
    if (socket.writable) {
      const json = JSON.stringify(body);
      const headers = Object.entries({
        ...ERROR_HEADERS,
        'content-length': Buffer.byteLength(json),
        connection: 'close',
      })
        .map(([name, value]) => `${name}: ${value}\r\n`)
        .join('');
      socket.write(`HTTP/1.1 ${body.error} ${STATUS_CODES[body.error]}\r\n${headers}\r\n${json}`);
    }
    socket.destroy();
  };
}

function connectionErrorBody(code: string | undefined, requestTimeoutMs: number): ErrorDto {
  switch (code) {
    case 'HPE_HEADER_OVERFLOW':
      return { error: 431, message: `Request line and headers are larger than the limit of ${MAX_HEADER_BYTES} bytes` };
    case 'ERR_HTTP_REQUEST_TIMEOUT':
      return { error: 408, message: `The request was not received completely within ${requestTimeoutMs} ms` };
    default:
      return { error: 400, message: 'Malformed HTTP request' };
  }
}

/**
 * Fastify's `frameworkErrors`: the errors its router raises before a route, hence Nest, is chosen.
 * They get the Error body and the API's headers like any other answer.
 */
export function frameworkErrors(error: FastifyError, request: FastifyRequest, reply: FastifyReply): void {
  const body = frameworkErrorBody(error.code);
  logger.log(`Request ${request.id} ${request.method} answered ${body.error} before any route: ${body.message}`);
  void reply.code(body.error).headers(ERROR_HEADERS).header('x-request-id', request.id).send(JSON.stringify(body));
}

function frameworkErrorBody(code: string): ErrorDto {
  switch (code) {
    case 'FST_ERR_BAD_URL':
      return { error: 400, message: 'The request URL is malformed (invalid percent-encoding)' };
    case 'FST_ERR_MAX_PARAM_LENGTH':
      return { error: 414, message: `A path parameter is longer than ${MAX_PARAM_LENGTH} characters` };
    default:
      return { error: 500, message: 'Internal server error' };
  }
}

/**
 * True when the client closed the connection before its request was read: Node's `aborted` error,
 * or a 4xx that reading the cut body led to. There is no one left to answer. A server-side failure
 * of a request whose client has gone is not one of these: it is still logged as a failure.
 */
export function isClientAbort(error: unknown, request: { raw?: { aborted?: boolean } }): boolean {
  const { code, message } = (error ?? {}) as NodeJS.ErrnoException;
  if (code === 'ECONNRESET' && message === 'aborted') return true;
  return request.raw?.aborted === true && error instanceof HttpException && error.getStatus() < 500;
}
