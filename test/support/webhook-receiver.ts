import { createServer, IncomingMessage, Server, ServerResponse } from 'node:http';
import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { Webhook } from 'standardwebhooks';
import { eventually } from './eventually';

/**
 * WEBHOOK_ALLOWED_NETWORKS for a service that sends to receivers on loopback (127.0.0.1, or ::1 for
 * `localhost`), which the default blocks with every other special-purpose range. Each test states it
 * in its own env: the service has no such default.
 */
export const LOOPBACK_NETWORKS = '127.0.0.0/8,::1/128';

/** A signing secret in the Standard Webhooks form, made fresh for a test. */
export function makeSecret(): string {
  return `whsec_${randomBytes(32).toString('base64')}`;
}

export interface ReceivedDelivery {
  webhookId: string;
  timestamp: string;
  signature: string;
  contentType?: string;
  userAgent?: string;
  /** The body exactly as received. */
  body: string;
  /** Which of `secrets` verified it, by index (every one should). */
  verifiedBy: number[];
  /** 1 for the first request with this webhook-id, 2 for the next… */
  attempt: number;
  receivedAt: number;
  /** The `traceparent` header, when the sender traces. */
  traceparent?: string;
  /** The `tracestate` and `baggage` headers, which the sender should never send. */
  tracestate?: string;
  baggage?: string;
  /** The status it was answered with; undefined while (or if forever) it hangs. */
  answered?: number;
}

/** What the receiver does with a request: answer with a status (after an optional delay, with optional headers), or never answer. */
export type Answer = number | { status: number; delayMs?: number; headers?: Record<string, string> } | 'hang';

/**
 * A webhook subscriber on 127.0.0.1 for tests: it verifies every request with `standardwebhooks`
 * against each secret it knows, records it, and answers as `answer` says for that attempt.
 */
export class WebhookReceiver {
  readonly received: ReceivedDelivery[] = [];
  /** Webhook ids seen in flight at the same moment twice (a delivery sent by two instances at once). */
  readonly overlaps: string[] = [];
  private readonly inFlight = new Set<string>();
  private readonly hanging = new Set<ServerResponse>();
  private server?: Server;
  private readonly verifiers: Webhook[];
  port = 0;

  constructor(
    secrets: readonly string[],
    private answer: (delivery: ReceivedDelivery) => Answer = () => 200,
  ) {
    this.verifiers = secrets.map((secret) => new Webhook(secret));
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}/hooks/plants`;
  }

  /** Verifies with this secret too, from now on (an endpoint's secret from the admin API, say). */
  trust(secret: string): void {
    this.verifiers.push(new Webhook(secret));
  }

  /** Whether a delivery received elsewhere verifies with this receiver's secrets. */
  verifies(delivery: ReceivedDelivery): boolean {
    return this.verifiers.some((verifier) => {
      try {
        verifier.verify(
          delivery.body,
          {
            'webhook-id': delivery.webhookId,
            'webhook-timestamp': delivery.timestamp,
            'webhook-signature': delivery.signature,
          },
          { jsonParse: false },
        );
        return true;
      } catch {
        return false;
      }
    });
  }

  answerWith(answer: (delivery: ReceivedDelivery) => Answer): void {
    this.answer = answer;
  }

  async start(port = 0): Promise<void> {
    const server = createServer((request, response) => void this.handle(request, response));
    await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
    this.port = (server.address() as { port: number }).port;
    this.server = server;
  }

  async stop(): Promise<void> {
    for (const response of this.hanging) response.destroy();
    this.server?.closeAllConnections();
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
    this.server = undefined;
  }

  /** Distinct webhook ids received. */
  ids(): Set<string> {
    return new Set(this.received.map((delivery) => delivery.webhookId));
  }

  /** The requests it answered with a 2xx: the deliveries that succeeded. */
  accepted(): ReceivedDelivery[] {
    return this.received.filter((delivery) => delivery.answered !== undefined && delivery.answered < 300);
  }

  /** Resolves once `done()` holds; rejects after `timeoutMs`, saying how much arrived. */
  async waitFor(done: () => boolean, timeoutMs = 15000): Promise<void> {
    await eventually(done, timeoutMs).catch(() => {
      throw new Error(`waited ${timeoutMs} ms; received ${this.received.length}`);
    });
  }

  private async handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of request) chunks.push(chunk as Buffer);
    const body = Buffer.concat(chunks).toString('utf8');
    const header = (name: string) => {
      const value = request.headers[name];
      return typeof value === 'string' ? value : undefined;
    };
    const webhookId = header('webhook-id') ?? '';
    const headers = {
      'webhook-id': webhookId,
      'webhook-timestamp': header('webhook-timestamp') ?? '',
      'webhook-signature': header('webhook-signature') ?? '',
    };
    const verifiedBy = this.verifiers.flatMap((verifier, i) => {
      try {
        verifier.verify(body, headers, { jsonParse: false });
        return [i];
      } catch {
        return [];
      }
    });
    const delivery: ReceivedDelivery = {
      webhookId,
      timestamp: headers['webhook-timestamp'],
      signature: headers['webhook-signature'],
      contentType: header('content-type'),
      userAgent: header('user-agent'),
      traceparent: header('traceparent'),
      tracestate: header('tracestate'),
      baggage: header('baggage'),
      body,
      verifiedBy,
      attempt: this.received.filter((earlier) => earlier.webhookId === webhookId).length + 1,
      receivedAt: Date.now(),
    };
    this.received.push(delivery);
    if (this.inFlight.has(webhookId)) this.overlaps.push(webhookId);
    this.inFlight.add(webhookId);
    const answer = this.answer(delivery);
    if (answer === 'hang') {
      this.hanging.add(response);
      response.on('close', () => this.inFlight.delete(webhookId));
      return;
    }
    const { status, delayMs = 0, headers: extra = {} } = typeof answer === 'number' ? { status: answer } : answer;
    if (delayMs > 0) await sleep(delayMs);
    this.inFlight.delete(webhookId);
    delivery.answered = status;
    response
      .writeHead(status, { ...(status >= 300 && status < 400 ? { location: '/elsewhere' } : {}), ...extra })
      .end();
  }
}
