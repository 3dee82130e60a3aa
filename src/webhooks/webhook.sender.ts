import { API_VERSION } from '../openapi/openapi-document';
import { ClaimedDelivery } from './persistence/deliveries.store';
import { WebhookSigner } from './webhook.signer';

/** How one attempt ended, as counted in the metrics. */
export type AttemptOutcome = '2xx' | '3xx' | '4xx' | '5xx' | 'gone' | 'timeout' | 'network' | 'aborted';

export interface Attempt {
  readonly outcome: AttemptOutcome;
  /** For the log and `last_error`: the status, or what went wrong on the way. Never a secret. */
  readonly detail: string;
}

const USER_AGENT = `PlantStore-Webhooks/${API_VERSION}`;

/**
 * Sends one attempt of one delivery: `POST <url>` with the exact body and the Standard Webhooks
 * headers, signed afresh with this attempt's timestamp. Success is a 2xx within the timeout;
 * redirects are not followed (a 3xx is a failure), and the response body is not read.
 */
export class WebhookSender {
  constructor(
    private readonly signer: WebhookSigner,
    private readonly timeoutMs: number,
  ) {}

  async send(delivery: ClaimedDelivery, shutdown: AbortSignal): Promise<Attempt> {
    if (shutdown.aborted) return { outcome: 'aborted', detail: 'shutting down' };
    const timestamp = Math.floor(Date.now() / 1000);
    // One controller per attempt, aborted by its timer or by shutdown. (Not AbortSignal.any() with
    // the long-lived shutdown signal: on Node 20 that keeps every attempt's signal alive on it.)
    const controller = new AbortController();
    const timer = setTimeout(() => controller.abort(), this.timeoutMs);
    const onShutdown = () => controller.abort();
    shutdown.addEventListener('abort', onShutdown, { once: true });
    try {
      const response = await fetch(delivery.url, {
        method: 'POST',
        redirect: 'manual',
        signal: controller.signal,
        headers: {
          'content-type': 'application/json',
          'user-agent': USER_AGENT,
          'webhook-id': delivery.webhookId,
          'webhook-timestamp': String(timestamp),
          'webhook-signature': this.signer.sign(delivery.webhookId, timestamp, delivery.payload),
        },
        body: delivery.payload,
      });
      // Only the status counts; the connection goes back to the pool without reading the body.
      await response.body?.cancel();
      return { outcome: outcomeOf(response.status), detail: `HTTP ${response.status}` };
    } catch (error) {
      if (shutdown.aborted) return { outcome: 'aborted', detail: 'shutting down' };
      if (controller.signal.aborted) return { outcome: 'timeout', detail: `no answer within ${this.timeoutMs} ms` };
      // undici's "fetch failed" hides the reason (ECONNREFUSED, ENOTFOUND…) in its cause.
      const cause = (error as { cause?: { code?: string; message?: string } }).cause;
      return { outcome: 'network', detail: cause?.code ?? cause?.message ?? (error as Error).message };
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
