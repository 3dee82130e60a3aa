import { once } from 'node:events';
import { createServer, IncomingMessage, Server, ServerResponse } from 'node:http';
import { AddressInfo, Socket } from 'node:net';
import { eventually } from '../../test/support/eventually';
import { BlockedNetworks } from '../common/networks/blocked-networks';
import { WebhookConfig } from '../config/app-config';
import { ClaimedDelivery } from './deliveries';
import { MAX_ANSWER_BODY_BYTES, MAX_ANSWER_HEADER_BYTES, WebhookSender } from './webhook.sender';

const TIMEOUT_MS = 1000;
// The receivers listen on loopback, a special-purpose range: opened, as an operator would.
const LOOPBACK_OPEN = new BlockedNetworks([], ['127.0.0.0/8', '::1/128']);
// Waits for what the receiver observes: generous, since the machine may be loaded. Never a threshold.
const OBSERVED_WITHIN_MS = 15000;
// Far more than a bounded read plus every buffer between the two ends (the kernel's on loopback
// holds a few MiB), and far less than the endless answer the receiver would go on writing.
const WRITTEN_BOUND = 64 * 1024 * 1024;

/** What a receiver saw of one connection. */
interface ObservedSocket {
  closed: boolean;
  bytesWritten: number;
}

/** A receiver on 127.0.0.1 that answers as `handler` says and records every connection. */
class Receiver {
  readonly sockets: ObservedSocket[] = [];
  private readonly server: Server;
  private readonly open = new Set<Socket>();

  constructor(handler: (request: IncomingMessage, response: ServerResponse) => void) {
    this.server = createServer((request, response) => {
      // The request body is read in full before answering, as a real receiver would.
      request.resume();
      request.on('end', () => handler(request, response));
    });
    this.server.on('connection', (socket: Socket) => {
      const observed: ObservedSocket = { closed: false, bytesWritten: 0 };
      this.sockets.push(observed);
      this.open.add(socket);
      socket.on('close', () => {
        observed.closed = true;
        observed.bytesWritten = socket.bytesWritten;
        this.open.delete(socket);
      });
    });
  }

  /** Whether it saw a connection, and every one it saw is closed. (After an abort, undici may open a
   * connection for the aborted request and close it at once without a byte: that one counts too.) */
  allClosed(): boolean {
    return this.sockets.length > 0 && this.sockets.every((socket) => socket.closed);
  }

  bytesWritten(): number {
    return this.sockets.reduce((sum, socket) => sum + socket.bytesWritten, 0);
  }

  async start(): Promise<string> {
    this.server.listen(0, '127.0.0.1');
    await once(this.server, 'listening');
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/hooks/T000/B000/secretpart?token=abc`;
  }

  async stop(): Promise<void> {
    for (const socket of this.open) socket.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

/** Writes `chunk` for as long as the connection stays open, at the pace the other end reads. */
function writeForever(response: ServerResponse, chunk: Buffer): void {
  const pump = () => {
    while (!response.destroyed && response.write(chunk));
    if (!response.destroyed) response.once('drain', pump);
  };
  response.on('close', () => response.removeAllListeners('drain'));
  pump();
}

function delivery(url: string): ClaimedDelivery {
  return {
    id: '1',
    webhookId: 'msg_sender_spec',
    endpointId: 'ep_sender_spec',
    url,
    secrets: [{ secret: `whsec_${Buffer.alloc(32, 7).toString('base64')}` }],
    payload: '{"id":1,"name":"Fern"}',
    attempts: 0,
    attemptsOnSchedule: 0,
    createdAtMs: Date.now(),
    leaseToken: 'lease',
    dueAt: '0',
  };
}

describe('WebhookSender (real receivers on 127.0.0.1)', () => {
  let sender: WebhookSender;
  let receiver: Receiver | undefined;
  const running = new AbortController();

  beforeEach(() => {
    sender = new WebhookSender({ timeoutMs: TIMEOUT_MS } as WebhookConfig, LOOPBACK_OPEN);
  });
  afterEach(async () => {
    await sender.close();
    await receiver?.stop();
    receiver = undefined;
  });

  async function start(handler: (request: IncomingMessage, response: ServerResponse) => void): Promise<string> {
    receiver = new Receiver(handler);
    return receiver.start();
  }

  it('should end an answer that trickles a byte every 100 ms as a timeout, and close its connection', async () => {
    const timers: NodeJS.Timeout[] = [];
    const url = await start((_request, response) => {
      response.writeHead(200, { 'content-type': 'text/plain' });
      const timer = setInterval(() => response.write('.'), 100);
      timers.push(timer);
      response.on('close', () => clearInterval(timer));
    });
    try {
      const attempt = await sender.send(delivery(url), running.signal);

      expect(attempt).toMatchObject({ outcome: 'timeout', detail: `no answer within ${TIMEOUT_MS} ms` });
      // The deadline covered the body too: the attempt did not end before it (nor wait for the body to end).
      expect(attempt.durationMs).toBeGreaterThanOrEqual(TIMEOUT_MS - 50);
      // The connection is closed, not kept open by a body drained in the background.
      await eventually(() => receiver!.allClosed(), OBSERVED_WITHIN_MS);
    } finally {
      timers.forEach(clearInterval);
    }
  });

  it('should time out an answer whose headers never come, and close its connection', async () => {
    const url = await start(() => undefined);

    const attempt = await sender.send(delivery(url), running.signal);

    expect(attempt).toMatchObject({ outcome: 'timeout', detail: `no answer within ${TIMEOUT_MS} ms` });
    await eventually(() => receiver!.allClosed(), OBSERVED_WITHIN_MS);
  });

  it.each([
    ['an endless chunked body', undefined],
    ['a declared body of 1 GiB', String(1024 ** 3)],
  ])('should read only a bounded part of %s, count the status, and close the connection', async (_name, length) => {
    const url = await start((_request, response) => {
      response.writeHead(200, {
        'content-type': 'application/octet-stream',
        ...(length ? { 'content-length': length } : {}),
      });
      writeForever(response, Buffer.alloc(64 * 1024, 'x'));
    });

    const attempt = await sender.send(delivery(url), running.signal);

    expect(attempt).toMatchObject({ outcome: '2xx', status: 200, detail: 'HTTP 200' });
    await eventually(() => receiver!.allClosed(), OBSERVED_WITHIN_MS);
    expect(receiver!.bytesWritten()).toBeLessThan(WRITTEN_BOUND);
  });

  it('should refuse an answer whose headers exceed the limit, and close its connection', async () => {
    const url = await start((_request, response) => {
      response.writeHead(200, { 'x-padding': 'p'.repeat(MAX_ANSWER_HEADER_BYTES) }).end();
    });

    const attempt = await sender.send(delivery(url), running.signal);

    expect(attempt).toMatchObject({ outcome: 'network', detail: 'UND_ERR_HEADERS_OVERFLOW' });
    await eventually(() => receiver!.allClosed(), OBSERVED_WITHIN_MS);
  });

  it.each([
    ['no body', ''],
    ['a short body', 'ok'],
    ['a body of exactly the bytes read', 'y'.repeat(MAX_ANSWER_BODY_BYTES)],
  ])('should keep the connection of an answer with %s for the next send', async (_name, body) => {
    const url = await start((_request, response) => {
      response.writeHead(200, { 'content-type': 'text/plain' }).end(body);
    });

    const first = await sender.send(delivery(url), running.signal);
    // undici frees the connection a moment after the body ends: the next send goes on it after that.
    await new Promise((resolve) => setImmediate(resolve));
    const second = await sender.send(delivery(url), running.signal);

    expect([first.outcome, second.outcome]).toEqual(['2xx', '2xx']);
    // One connection, still open: the second send went over the first one's.
    expect(receiver!.sockets.map((socket) => socket.closed)).toEqual([false]);
  });

  it('should abort at shutdown while the answer still comes, and close the connection', async () => {
    const shutdown = new AbortController();
    const url = await start((_request, response) => {
      response.writeHead(200, { 'content-type': 'text/plain' });
      response.write('.');
      // Shutdown comes once the headers are answered; the body never ends.
      setImmediate(() => shutdown.abort());
    });
    const slow = new WebhookSender({ timeoutMs: 60_000 } as WebhookConfig, LOOPBACK_OPEN);
    try {
      const attempt = await slow.send(delivery(url), shutdown.signal);

      expect(attempt).toMatchObject({ outcome: 'aborted', detail: 'shutting down' });
      await eventually(() => receiver!.allClosed(), OBSERVED_WITHIN_MS);
    } finally {
      await slow.close();
    }
  });

  it('should say what failed by its code, without the URL', async () => {
    const url = await start(() => undefined);
    const closed = new URL(url);
    await receiver!.stop();
    receiver = undefined;

    const attempt = await sender.send(delivery(closed.href), running.signal);

    expect(attempt).toMatchObject({ outcome: 'network', detail: 'ECONNREFUSED' });
  });

  describe('in production (https only)', () => {
    it('should fail a plain http send without connecting, naming the rule, unless its address is allowed', async () => {
      let requests = 0;
      const url = await start((_request, response) => {
        requests++;
        response.end();
      });
      const localhost = url.replace('127.0.0.1', 'localhost');
      const production = new WebhookSender({ timeoutMs: TIMEOUT_MS, httpsOnly: true } as WebhookConfig, LOOPBACK_OPEN);
      const closed = new WebhookSender(
        { timeoutMs: TIMEOUT_MS, httpsOnly: true } as WebhookConfig,
        new BlockedNetworks([], ['::1/128']),
      );
      try {
        const rule =
          'url must be https when NODE_ENV=production (plain http only to an IP address inside WEBHOOK_ALLOWED_NETWORKS); not connecting';
        // A name is never enough, even one that resolves into an allowed range.
        await expect(production.send(delivery(localhost), running.signal)).resolves.toMatchObject({
          outcome: 'blocked',
          detail: rule,
        });
        await expect(closed.send(delivery(url), running.signal)).resolves.toMatchObject({
          outcome: 'blocked',
          detail: rule,
        });
        expect(requests).toBe(0);
        await expect(production.send(delivery(url), running.signal)).resolves.toMatchObject({ outcome: '2xx' });
        expect(requests).toBe(1);
      } finally {
        await production.close();
        await closed.close();
      }
    });
  });
});
