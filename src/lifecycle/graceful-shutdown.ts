import { Server } from 'node:http';
import { INestApplication } from '@nestjs/common';
import { ShutdownSignal } from './shutdown-signal';

/** What closing needs after the connections are drained: the features' hooks, then the database. */
export const SHUTDOWN_RESERVE_MS = 1000;
// While draining, connections that finished their last request are closed this often.
const REAP_IDLE_EVERY_MS = 50;

/**
 * The shutdown order (docs/operations.md, "Shutdown"):
 * 1. raise the shutdown signal: readiness answers 503, webhook sends in flight are aborted (their
 *    deliveries go back to pending) and nothing more is claimed;
 * 2. stop accepting connections, and let the requests in flight finish, each answered with
 *    `Connection: close`; at `timeoutMs - SHUTDOWN_RESERVE_MS`, whatever a client still holds open
 *    (a body that never ends, say) is cut;
 * 3. close the application: the features' hooks, then the database, last.
 *
 * Not Nest's own `app.close()` alone: it runs the features' hooks before it closes the listener, which
 * would keep accepting connections (and readiness saying 200) while a webhook send runs to its timeout.
 */
export async function shutDownGracefully(app: INestApplication, timeoutMs: number): Promise<void> {
  app.get(ShutdownSignal).raise();
  const server = app.getHttpServer() as Server;
  const drained = new Promise<void>((resolve) => server.close(() => resolve()));
  const reap = setInterval(() => server.closeIdleConnections(), REAP_IDLE_EVERY_MS);
  const cut = setTimeout(() => server.closeAllConnections(), Math.max(0, timeoutMs - SHUTDOWN_RESERVE_MS));
  try {
    await drained;
  } finally {
    clearInterval(reap);
    clearTimeout(cut);
  }
  await app.close();
}
