import { isIP } from 'node:net';
import { Injectable } from '@nestjs/common';
import { Agent, request } from 'undici';
import { API_VERSION } from '../common/api-version';
import { WebhookConfig } from '../config/app-config';
import { withoutUrl } from '../common/networks/host-of';
import { BlockedAddressError, BlockedNetworks } from '../common/networks/blocked-networks';
import { plainHttpProblem } from '../common/networks/plain-http';
import { signingSecrets } from './endpoints/endpoint';
import { ClaimedDelivery } from './deliveries';
import { retryAfterMs } from './retry-after';
import { signature } from './webhook.signer';

/** How one attempt ended, as counted in the metrics. */
export type AttemptOutcome = '2xx' | '3xx' | '4xx' | '5xx' | 'gone' | 'timeout' | 'network' | 'blocked' | 'aborted';

export interface Attempt {
  readonly outcome: AttemptOutcome;
  /** The response's status, when one came. */
  readonly status?: number;
  /** For the log and the attempt log: the status, or what went wrong on the way. Never a secret. */
  readonly detail: string;
  /** When it started (Unix ms), and how long it took. */
  readonly atMs: number;
  readonly durationMs: number;
  /** A 429's or 503's `Retry-After`, in ms from now (clamped to an hour), when it had a valid one. */
  readonly retryAfterMs?: number;
}

const USER_AGENT = `PlantStore-Webhooks/${API_VERSION}`;

/**
 * How much of an answer's body a send reads. Only the status counts: a body this small (or smaller)
 * is read to its end, so the connection goes back to the pool; past it, the connection is closed.
 */
export const MAX_ANSWER_BODY_BYTES = 4 * 1024;
/** The largest status line and headers an answer may have (undici's `maxHeaderSize`). */
export const MAX_ANSWER_HEADER_BYTES = 16 * 1024;

// undici's own timeouts, when they fire before the attempt's deadline (they are coarser): a timeout too.
const TIMEOUT_CODES = new Set(['UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT']);

/**
 * Sends one attempt of one delivery: `POST <url>` with the exact body and the Standard Webhooks
 * headers, signed afresh with this attempt's timestamp and the endpoint's secrets. Success is a 2xx
 * within the timeout; redirects are not followed (a 3xx is a failure).
 *
 * The attempt's deadline (WEBHOOK_TIMEOUT_MS) covers everything: connecting, the answer's headers,
 * and reading at most MAX_ANSWER_BODY_BYTES of its body. A send resolves only once the answer is
 * read to its end (the connection goes back to the pool) or its connection is destroyed (a body too
 * large, or still coming at the deadline), so a receiver that trickles its answer never holds a
 * socket past the attempt, nor after the dispatcher has freed the endpoint's slot. Connections go
 * through an agent whose name lookup refuses the blocked networks; in production a plain http url
 * fails before connecting, unless it names an address inside WEBHOOK_ALLOWED_NETWORKS.
 */
@Injectable()
export class WebhookSender {
  private readonly agent: Agent;
  private readonly timeoutMs: number;
  private readonly httpsOnly: boolean;

  constructor(
    config: WebhookConfig,
    private readonly blocked: BlockedNetworks,
  ) {
    const { timeoutMs } = config;
    this.timeoutMs = timeoutMs;
    this.httpsOnly = config.httpsOnly === true;
    this.agent = new Agent({
      connect: { lookup: blocked.lookup, timeout: timeoutMs },
      // Never longer than the attempt (undici's defaults are 300 s, and the body's measures the gap
      // between chunks); the attempt's own timer normally ends it first.
      headersTimeout: timeoutMs,
      bodyTimeout: timeoutMs,
      maxHeaderSize: MAX_ANSWER_HEADER_BYTES,
    });
  }

  async close(): Promise<void> {
    await this.agent.destroy();
  }

  async send(delivery: ClaimedDelivery, shutdown: AbortSignal): Promise<Attempt> {
    const atMs = Date.now();
    const started = performance.now();
    const ended = (outcome: AttemptOutcome, detail: string, status?: number): Attempt => ({
      outcome,
      detail,
      ...(status === undefined ? {} : { status }),
      atMs,
      durationMs: Math.round(performance.now() - started),
    });
    if (shutdown.aborted) return ended('aborted', 'shutting down');
    // Plain http in production, and a literal address (never looked up), are checked here, before connecting.
    const plainHttp = plainHttpProblem(delivery.url, this.httpsOnly, this.blocked);
    if (plainHttp !== undefined) return ended('blocked', `url ${plainHttp}; not connecting`);
    const host = new URL(delivery.url).hostname.replace(/^\[|\]$/g, '');
    if (isIP(host) !== 0 && this.blocked.blocks(host)) return ended('blocked', new BlockedAddressError(host).message);
    const timestamp = Math.floor(atMs / 1000);
    // One controller per attempt, aborted by its timer or by shutdown. (Not AbortSignal.any() with
    // the long-lived shutdown signal: on Node 20 that keeps every attempt's signal alive on it.)
    const controller = new AbortController();
    const timer = setTimeout(() => controller.abort(), this.timeoutMs);
    const onShutdown = () => controller.abort();
    shutdown.addEventListener('abort', onShutdown, { once: true });
    try {
      // undici's `request`, not `fetch`: a quarter of the CPU per send (no WHATWG Request, Response
      // or streams), and it never follows a redirect.
      const response = await request(delivery.url, {
        method: 'POST',
        signal: controller.signal,
        dispatcher: this.agent,
        headers: {
          'content-type': 'application/json',
          'user-agent': USER_AGENT,
          'webhook-id': delivery.webhookId,
          'webhook-timestamp': String(timestamp),
          'webhook-signature': signature(
            signingSecrets(delivery.secrets, atMs),
            delivery.webhookId,
            timestamp,
            delivery.payload,
          ),
        },
        body: delivery.payload,
      });
      // Only the status counts. At most MAX_ANSWER_BODY_BYTES of the body are read, within the same
      // deadline: to its end (the connection is kept for the next send), or the connection is
      // destroyed (a larger body, or the deadline: then the attempt is a timeout, whatever the status).
      await response.body.dump({ limit: MAX_ANSWER_BODY_BYTES, signal: controller.signal });
      const retryAfter = retryAfterMs(response.statusCode, response.headers['retry-after']);
      const answered = ended(outcomeOf(response.statusCode), `HTTP ${response.statusCode}`, response.statusCode);
      return retryAfter === undefined ? answered : { ...answered, retryAfterMs: retryAfter };
    } catch (error) {
      if (shutdown.aborted) return ended('aborted', 'shutting down');
      if (controller.signal.aborted) return ended('timeout', `no answer within ${this.timeoutMs} ms`);
      // The connection's own error (ECONNREFUSED, ENOTFOUND, a blocked address…), or undici's with it as the cause.
      const failure = error as Error & { code?: string; cause?: Error & { code?: string } };
      const reason = failure.code === undefined && failure.cause !== undefined ? failure.cause : failure;
      if (reason instanceof BlockedAddressError) return ended('blocked', reason.message);
      if (reason.code !== undefined && TIMEOUT_CODES.has(reason.code)) {
        return ended('timeout', `no answer within ${this.timeoutMs} ms`);
      }
      // A message may quote the URL, whose path and query may hold a credential: the origin only.
      return ended('network', reason.code ?? withoutUrl(reason.message, delivery.url));
    } finally {
      clearTimeout(timer);
      shutdown.removeEventListener('abort', onShutdown);
    }
  }
}

function outcomeOf(status: number): AttemptOutcome {
  if (status === 410) return 'gone';
  if (status >= 200 && status < 300) return '2xx';
  if (status < 400) return '3xx';
  return status < 500 ? '4xx' : '5xx';
}
