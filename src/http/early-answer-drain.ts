import { IncomingMessage } from 'node:http';
import { Socket } from 'node:net';
import { Logger } from '@nestjs/common';

/** How much of a body still arriving after an early answer is read, and how long a silent client is waited for. */
export interface DrainLimits {
  maxBytes: number;
  idleMs: number;
}

const MIN_DRAIN_BYTES = 8 * 1024 * 1024;
const DRAIN_IDLE_MS = 2000;

/** API.md, "Answers before the body": up to max(8 MiB, 4 × BODY_LIMIT), or until the client is idle for 2 s. */
export function drainLimits(bodyLimit: number): DrainLimits {
  return { maxBytes: Math.max(MIN_DRAIN_BYTES, 4 * bodyLimit), idleMs: DRAIN_IDLE_MS };
}

/** Whether a request announces a body (a length above 0, or chunks). */
export function hasBody(headers: Record<string, string | string[] | undefined>): boolean {
  return headers['transfer-encoding'] !== undefined || (headers['content-length'] ?? '0') !== '0';
}

const logger = new Logger('Requests');
// The sockets a drain is set up on: Fastify runs the onSend hooks again when a later one fails, and a
// second set of listeners would count each byte twice (halving the bound) and override destroySoon again.
const draining = new WeakSet<Socket>();

/**
 * For an answer sent before its request's body has arrived (a 413 over BODY_LIMIT, a 415, a 401
 * given before the body): the answer says `Connection: close`, and the connection is closed only
 * once the rest of the body has been read and thrown away, or `limits.maxBytes` more have come,
 * or the client has sent nothing for `limits.idleMs`, whichever is first.
 *
 * Why: Node's http server ends and destroys the socket as soon as a `Connection: close` answer is
 * written (its `socket.destroySoon()`). Bytes still arriving on a closed socket make the kernel
 * reset the connection, and a client that writes its whole body before it reads (Node's
 * `http.request` + `req.end(body)`) gets EPIPE and never sees the answer. Here that socket only
 * half-closes when the answer is written (the answer and a FIN go out; reading goes on), as
 * Node itself does for a socket without `destroySoon`, and Node's own `destroySoon` runs once the
 * body is drained. A bound that is hit destroys the socket at once. A 408 (the client is the slow
 * one) and Node's 400/431 are answered on the bare socket elsewhere and close at once. Called again
 * for the same connection, it does nothing.
 */
export function drainThenClose(request: IncomingMessage, requestId: string, status: number, limits: DrainLimits): void {
  const socket = request.socket;
  if (socket.destroyed || draining.has(socket)) return;
  draining.add(socket);
  const cut = (reason: string) => {
    if (socket.destroyed) return;
    logger.log(`Request ${requestId} answered ${status} before its body: connection closed, ${reason}`);
    socket.destroy();
  };
  let received = 0;
  request.on('data', (chunk: Buffer) => {
    received += chunk.length;
    if (received > limits.maxBytes) cut(`more than ${limits.maxBytes} bytes of body kept coming`);
  });
  // A client that goes away mid-body: nothing left to do.
  request.on('error', () => undefined);
  let drained = false;
  const closeOnceWritten = () => Socket.prototype.destroySoon.call(socket);
  request.once('end', () => {
    drained = true;
    // Node's own close: now if the answer has gone already, else when Node calls it.
    if (!socket.writable) closeOnceWritten();
  });
  // Node refreshes this timer on every chunk it reads, so it fires only on a silent client. Node's own
  // listener would destroy the socket without a word: this one, first, says why.
  socket.setTimeout(limits.idleMs);
  socket.prependOnceListener('timeout', () => cut(`no body byte for ${limits.idleMs} ms`));
  socket.destroySoon = () => (drained ? closeOnceWritten() : void socket.end());
  request.resume();
}
