import { isIP } from 'node:net';
import { Agent, request } from 'undici';
import { API_VERSION } from '../common/api-version';
import { BlockedAddressError, BlockedNetworks } from './blocked-networks';
import { signingSecrets } from './endpoints/endpoint';
import { ClaimedDelivery } from './persistence/deliveries.store';
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
}

const USER_AGENT = `PlantStore-Webhooks/${API_VERSION}`;

/**
 * Sends one attempt of one delivery: `POST <url>` with the exact body and the Standard Webhooks
 * headers, signed afresh with this attempt's timestamp and the endpoint's secrets. Success is a 2xx
 * within the timeout; redirects are not followed (a 3xx is a failure), and the response body is not
 * read. Connections go through an agent whose name lookup refuses WEBHOOK_BLOCKED_NETWORKS.
 */
export class WebhookSender {
  private readonly agent: Agent;

  constructor(
    private readonly timeoutMs: number,
    private readonly blocked: BlockedNetworks,
  ) {
    this.agent = new Agent({ connect: { lookup: blocked.lookup } });
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
    // A literal address is never looked up: checked here instead.
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
      // Only the status counts. The body is read away in the background, so the connection goes back
      // to the pool (closed instead past 128 KiB, or after the agent's body timeout).
      response.body.dump().catch(() => undefined);
      return ended(outcomeOf(response.statusCode), `HTTP ${response.statusCode}`, response.statusCode);
    } catch (error) {
      if (shutdown.aborted) return ended('aborted', 'shutting down');
      if (controller.signal.aborted) return ended('timeout', `no answer within ${this.timeoutMs} ms`);
      // The connection's own error (ECONNREFUSED, ENOTFOUND, a blocked address…), or undici's with it as the cause.
      const failure = error as Error & { code?: string; cause?: Error & { code?: string } };
      const reason = failure.code === undefined && failure.cause !== undefined ? failure.cause : failure;
      if (reason instanceof BlockedAddressError) return ended('blocked', reason.message);
      return ended('network', reason.code ?? reason.message);
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
