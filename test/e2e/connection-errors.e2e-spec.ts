import { request } from '../support/http';
import { rawRequest } from '../support/raw-http';
import { createTestApp, TEST_TOKEN, TestApp } from '../support/test-app';

const AUTH = `Authorization: Bearer ${TEST_TOKEN}\r\n`;
const JSON_TYPE = 'application/json; charset=utf-8';

/**
 * What Node and Fastify's router answer before Nest sees a request: each in the Error shape, as
 * application/json, with the connection closed where the request could not be read.
 */
describe('errors before Nest (e2e, raw sockets)', () => {
  let server: TestApp;
  beforeAll(async () => (server = await createTestApp({ REQUEST_TIMEOUT_MS: '1000' })));
  afterAll(() => server.destroy());

  it('should answer headers past 16 KiB with 431 and close', async () => {
    const answer = await rawRequest(
      server.url,
      `GET /plants HTTP/1.1\r\nHost: t\r\n${AUTH}X-Big: ${'a'.repeat(17000)}\r\n\r\n`,
    );
    expect(answer).toMatchObject({
      status: 431,
      body: { error: 431, message: 'Request line and headers are larger than the limit of 16384 bytes' },
      closed: true,
    });
    expect(answer.headers['content-type']).toBe(JSON_TYPE);
    // The API's security headers, even on an answer written straight to the socket.
    expect(answer.headers['cache-control']).toBe('no-store');
    expect(answer.headers['x-frame-options']).toBe('DENY');
    // No request reaches the request log: a line of its own says what happened (never a header).
    expect(server.logs).toContainEqual(
      expect.stringContaining(
        'Answered 431 before any route, from 127.0.0.1: Request line and headers are larger than the limit of 16384 bytes',
      ),
    );
    expect(server.logs.join('\n')).not.toContain('aaaa');
  });

  it('should answer a URL past 16 KiB with 431 too (Node counts the request line with the headers)', async () => {
    const answer = await rawRequest(server.url, `GET /plants?limit=${'1'.repeat(17000)} HTTP/1.1\r\nHost: t\r\n\r\n`);
    expect(answer).toMatchObject({ status: 431, body: { error: 431 } });
  });

  it.each([
    ['a malformed request line', 'NOT A REQUEST\r\n\r\n'],
    ['a Content-Length that is not a number', `POST /plants HTTP/1.1\r\nHost: t\r\nContent-Length: ten\r\n\r\n{}`],
    ['a header line without a colon', `GET /plants HTTP/1.1\r\nHost: t\r\nno colon here\r\n\r\n`],
  ])('should answer %s with 400 and close', async (_case, bytes) => {
    const answer = await rawRequest(server.url, bytes);
    expect(answer).toMatchObject({
      status: 400,
      body: { error: 400, message: 'Malformed HTTP request' },
      closed: true,
    });
    expect(answer.headers['content-type']).toBe(JSON_TYPE);
  });

  it('should answer a path id longer than 100 characters with 414, with the API headers', async () => {
    for (const method of ['GET', 'DELETE']) {
      const answer = await request(`${server.url}/plants/${'1'.repeat(101)}`, { method });
      expect(answer.status).toBe(414);
      expect(answer.body).toEqual({ error: 414, message: 'A path parameter is longer than 100 characters' });
      expect(answer.headers.get('content-type')).toBe(JSON_TYPE);
      expect(answer.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
      expect(answer.headers.get('cache-control')).toBe('no-store');
      expect(answer.headers.get('x-frame-options')).toBe('DENY');
    }
    expect(server.logs).toContainEqual(
      expect.stringMatching(
        /Request \S+ GET answered 414 before any route: A path parameter is longer than 100 characters/,
      ),
    );
    // 100 characters still reach the route, whose pipe names the problem.
    const atLimit = await request(`${server.url}/plants/${'1'.repeat(100)}`, { method: 'GET' });
    expect(atLimit.status).toBe(400);
  });

  it('should answer a path with broken percent-encoding with 400', async () => {
    const answer = await rawRequest(server.url, `GET /plants/%zz HTTP/1.1\r\nHost: t\r\n${AUTH}\r\n`, { waitMs: 1000 });
    expect(answer).toMatchObject({
      status: 400,
      body: { error: 400, message: 'The request URL is malformed (invalid percent-encoding)' },
    });
  });

  it('should answer a body that stops arriving with 408 after REQUEST_TIMEOUT_MS, and store nothing', async () => {
    const head = `POST /plants HTTP/1.1\r\nHost: t\r\n${AUTH}Content-Type: application/json\r\nContent-Length: 100\r\n\r\n`;
    const answer = await rawRequest(server.url, `${head}{"id": 4080, "name": "st`, { waitMs: 10000 });
    expect(answer).toMatchObject({
      status: 408,
      body: { error: 408, message: 'The request was not received completely within 1000 ms' },
      closed: true,
    });
    expect((await request(`${server.url}/plants/4080`, { method: 'GET' })).status).toBe(404);
    expect(server.logs).toContainEqual(
      expect.stringContaining('Answered 408 before any route, from 127.0.0.1: The request was not received completely'),
    );
  });

  it('should drop a body the client aborts mid-stream: nothing stored, no error logged, the service unharmed', async () => {
    const head = `POST /plants HTTP/1.1\r\nHost: t\r\n${AUTH}Content-Type: application/json\r\nContent-Length: 100\r\n\r\n`;
    const answer = await rawRequest(server.url, `${head}{"id": 4081, "name": "ab`, { abortAfterMs: 200 });
    expect(answer.status).toBeUndefined();
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(server.logs.join('\n')).toMatch(/aborted by the client before its body was read/);
    expect(server.logs.join('\n')).not.toMatch(/failed|Internal server error/);
    expect((await request(`${server.url}/plants/4081`, { method: 'GET' })).status).toBe(404);
    expect((await request(`${server.url}/plants`, { body: { id: 4081, name: 'whole' } })).status).toBe(200);
  });
});
