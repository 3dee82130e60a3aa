import { connect } from 'node:net';

export interface RawAnswer {
  /** The status of the answer; undefined when the server closed without answering. */
  status?: number;
  headers: Record<string, string>;
  /** The body parsed as JSON, when it is JSON. */
  body?: unknown;
  /** Whether the server closed the connection. */
  closed: boolean;
}

/**
 * Writes bytes to the server as they are, which `fetch` cannot do (a malformed request line, a
 * body shorter than its Content-Length), and reads what comes back until the server closes the
 * connection or `waitMs` pass. `abortAfterMs` makes the client close first.
 */
export function rawRequest(
  url: string,
  bytes: string,
  options: { waitMs?: number; abortAfterMs?: number } = {},
): Promise<RawAnswer> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve) => {
    const socket = connect(Number(port), hostname, () => socket.write(bytes));
    let received = '';
    let closed = false;
    socket.setEncoding('latin1');
    socket.on('data', (chunk: string) => (received += chunk));
    socket.on('error', () => undefined);
    const finish = () => {
      clearTimeout(timer);
      socket.destroy();
      resolve(parse(received, closed));
    };
    socket.on('close', () => {
      closed = true;
      finish();
    });
    const timer = setTimeout(finish, options.abortAfterMs ?? options.waitMs ?? 5000);
  });
}

function parse(received: string, closed: boolean): RawAnswer {
  const [head, ...rest] = received.split('\r\n\r\n');
  const [statusLine, ...headerLines] = head.split('\r\n');
  const status = /^HTTP\/1\.1 (\d{3})/.exec(statusLine)?.[1];
  const headers = Object.fromEntries(
    headerLines.map((line) => [
      line.slice(0, line.indexOf(':')).toLowerCase(),
      line.slice(line.indexOf(':') + 1).trim(),
    ]),
  );
  let body: unknown;
  try {
    body = JSON.parse(rest.join('\r\n\r\n'));
  } catch {
    body = undefined;
  }
  return { status: status === undefined ? undefined : Number(status), headers, body, closed };
}

export interface RawConnection {
  /** Writes more bytes on the open connection. */
  write(bytes: string): void;
  /** What came back, once the server has closed the connection (or `waitMs` passed). */
  answer(waitMs?: number): Promise<RawAnswer>;
}

/** A connection opened now, written to in parts: a request that is in flight while the test does something else. */
export async function openRawConnection(url: string, bytes: string): Promise<RawConnection> {
  const { hostname, port } = new URL(url);
  const socket = connect(Number(port), hostname);
  await new Promise<void>((resolve, reject) => {
    socket.once('connect', resolve);
    socket.once('error', reject);
  });
  socket.write(bytes);
  let received = '';
  socket.setEncoding('latin1');
  socket.on('data', (chunk: string) => (received += chunk));
  socket.on('error', () => undefined);
  const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
  return {
    write: (more) => socket.write(more),
    answer: async (waitMs = 5000) => {
      let timer: NodeJS.Timeout | undefined;
      const gaveUp = await Promise.race([
        closed.then(() => false),
        new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(true), waitMs))),
      ]);
      clearTimeout(timer);
      socket.destroy();
      return parse(received, !gaveUp);
    },
  };
}
