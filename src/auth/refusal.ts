import { FastifyReply } from 'fastify';
import { BEARER_REALM } from './invalid-credentials.exception';

/**
 * What a request without a valid credential is answered, as plain data: a 401 with its RFC 6750
 * challenge, or a 429 with its Retry-After once its address is past AUTH_FAILURES_PER_MINUTE. The
 * 401s are made once, their bodies written then; a 429 is made per answer (its seconds vary). No
 * exception and no stack trace is made for a failing request: `answerRefusal` sends one from a
 * Fastify hook, and `AccessTokenVerifier.verifyRequest` turns one into the exception that Nest's
 * pipeline and `AllExceptionsFilter` answer with the same status, headers and body.
 */
export class Refusal {
  /** The Error body, as sent. */
  readonly body: string;

  private constructor(
    readonly status: 401 | 429,
    readonly message: string,
    /** The `WWW-Authenticate` challenge of a 401. */
    readonly challenge: string | undefined,
    /** The `Retry-After` seconds of a 429. */
    readonly retryAfterSeconds: number | undefined,
  ) {
    this.body = JSON.stringify({ error: status, message });
  }

  /** A 401: `error="invalid_token"` in its challenge when a token was presented. */
  static unauthorized(message: string, tokenPresented: boolean): Refusal {
    return new Refusal(
      401,
      message,
      tokenPresented ? `${BEARER_REALM}, error="invalid_token"` : BEARER_REALM,
      undefined,
    );
  }

  /** A 429 for an address past its failed authentications. */
  static tooManyFailures(retryAfterSeconds: number, perMinute: number): Refusal {
    const message = `Too many failed authentications from this address (at most ${perMinute} per minute); retry after ${retryAfterSeconds} s`;
    return new Refusal(429, message, undefined, retryAfterSeconds);
  }
}

/**
 * Sends `refusal` from a Fastify hook: what `AllExceptionsFilter` sends for the same exception
 * (status, `Retry-After` or `WWW-Authenticate`, the JSON content type, the Error body); the hooks of
 * every answer (request id, security headers, log line, metrics) run as for any other.
 */
export function answerRefusal(reply: FastifyReply, refusal: Refusal): void {
  void reply.code(refusal.status);
  if (refusal.retryAfterSeconds !== undefined) void reply.header('retry-after', String(refusal.retryAfterSeconds));
  if (refusal.challenge !== undefined) void reply.header('www-authenticate', refusal.challenge);
  void reply.header('content-type', 'application/json; charset=utf-8').send(refusal.body);
}
