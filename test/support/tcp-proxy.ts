import { createConnection, createServer, Server, Socket } from 'node:net';

/**
 * A TCP proxy on 127.0.0.1 in front of a real server, which a test can cut (every connection
 * dropped, new ones refused) and restore on the same port: the database "going away"; or freeze
 * (connections stay open, nothing gets through either way): the database hanging.
 */
export class TcpProxy {
  private server?: Server;
  private readonly sockets = new Set<Socket>();
  private frozen: 'both' | 'answers' | undefined;
  port = 0;
  /** What clients sent while frozen both ways (which never reached the server), as latin1 text. */
  dropped = '';

  constructor(
    private readonly targetHost: string,
    private readonly targetPort: number,
  ) {}

  async start(): Promise<void> {
    const server = createServer((client) => {
      const upstream = createConnection({ host: this.targetHost, port: this.targetPort });
      for (const socket of [client, upstream]) {
        this.sockets.add(socket);
        socket.on('close', () => this.sockets.delete(socket));
        socket.on('error', () => socket.destroy());
      }
      // Bytes that arrive while frozen are dropped, as a hung server or a partition would lose them.
      client.on('data', (chunk: Buffer) => {
        if (this.frozen === 'both') this.dropped += chunk.toString('latin1');
        else upstream.write(chunk);
      });
      upstream.on('data', (chunk: Buffer) => void (this.frozen !== undefined || client.write(chunk)));
      client.on('close', () => upstream.destroy());
      upstream.on('close', () => client.destroy());
    });
    await new Promise<void>((resolve) => server.listen(this.port, '127.0.0.1', resolve));
    this.port = (server.address() as { port: number }).port;
    this.server = server;
  }

  /**
   * Stops passing bytes on, on every connection: both ways, or only the server's answers (what
   * the client sends still arrives and is acted on). Connections stay open; new ones are accepted.
   */
  freeze(direction: 'both' | 'answers' = 'both'): void {
    this.frozen = direction;
  }

  thaw(): void {
    this.frozen = undefined;
  }

  /** Drops every connection and stops listening. */
  async cut(): Promise<void> {
    const server = this.server;
    this.server = undefined;
    for (const socket of this.sockets) socket.destroy();
    if (server) await new Promise<void>((resolve) => server.close(() => resolve()));
  }
}
