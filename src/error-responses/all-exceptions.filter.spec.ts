import { ResourceConflictError } from '../common/errors/resource-conflict.error';
import {
  ArgumentsHost,
  BadRequestException,
  ConflictException,
  HttpException,
  Logger,
  NotFoundException,
} from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import { InvalidCredentialsException } from '../auth/invalid-credentials.exception';
import { loadConfig } from '../config/load-config';
import { StorageError } from '../database/storage.error';
import { StorageTimeoutError } from '../database/storage-timeout.error';
import { StorageUnavailableError } from '../database/storage-unavailable.error';
import { Registry } from 'prom-client';
import { DatabaseErrorsMetrics } from './database-errors.metrics';
import { AllExceptionsFilter } from './all-exceptions.filter';

const JSON_TYPE = { 'Content-Type': 'application/json; charset=utf-8' };

interface Sent {
  status?: number;
  body?: unknown;
  headers: Record<string, string>;
}

function setup(routeConfig: object = {}, raw: object = {}) {
  const sent: Sent = { headers: {} };
  const metrics = new DatabaseErrorsMetrics(new Registry());
  const httpAdapter = {
    reply: (_reply: unknown, body: unknown, status: number) => Object.assign(sent, { body, status }),
    setHeader: (_reply: unknown, name: string, value: string) => (sent.headers[name] = value),
  };
  const host = {
    switchToHttp: () => ({
      getResponse: () => ({}),
      getRequest: () => ({ id: 'req-42', raw, routeOptions: { config: routeConfig } }),
    }),
  } as unknown as ArgumentsHost;
  const filter = new AllExceptionsFilter(
    { httpAdapter } as unknown as HttpAdapterHost,
    loadConfig({ BODY_LIMIT: '2048' }),
    metrics,
  );
  const counted = async (kind: string) =>
    (await metrics.failed.get()).values.find((value) => value.labels.kind === kind)?.value ?? 0;
  return { filter, host, sent, counted };
}

describe('AllExceptionsFilter', () => {
  let logged: jest.SpyInstance;
  beforeEach(() => (logged = jest.spyOn(Logger.prototype, 'error').mockImplementation(() => undefined)));
  afterEach(() => logged.mockRestore());

  it.each<[string, HttpException, number, string]>([
    [
      'a string message',
      new ConflictException('A plant with id 7 already exists'),
      409,
      'A plant with id 7 already exists',
    ],
    [
      'a list of messages',
      new BadRequestException(['id is required', 'name is required']),
      400,
      'id is required; name is required',
    ],
    ['a route miss', new NotFoundException('Cannot GET /x'), 404, 'Cannot GET /x'],
    [
      "Fastify's body too large",
      new HttpException('Request body is too large', 413),
      413,
      'Request body is larger than the limit of 2048 bytes',
    ],
    [
      "Fastify's unsupported media type",
      new HttpException('Unsupported Media Type', 415),
      415,
      'Content-Type must be application/json',
    ],
  ])('should answer an HttpException with %s as the Error body', (_label, exception, status, message) => {
    const { filter, host, sent } = setup();
    filter.catch(exception, host);
    expect(sent).toEqual({ status, body: { error: status, message }, headers: JSON_TYPE });
    expect(logged).not.toHaveBeenCalled();
  });

  describe('when the store is away', () => {
    const ROUTE_WORDS = { storageUnavailable: { timeout: 'route: may or may not', unavailable: 'route: not done' } };

    it.each<[string, Error, object, string, string]>([
      [
        'unreachable',
        new StorageUnavailableError('down', { cause: null }),
        ROUTE_WORDS,
        'route: not done',
        'unavailable',
      ],
      ['too slow', new StorageTimeoutError('slow', { cause: null }), ROUTE_WORDS, 'route: may or may not', 'timeout'],
      [
        'unreachable, on a route without its own words',
        new StorageUnavailableError('down', { cause: null }),
        {},
        'The database is unavailable; retry shortly',
        'unavailable',
      ],
      [
        'too slow, on a route without its own words',
        new StorageTimeoutError('slow', { cause: null }),
        {},
        'The database did not answer in time; retry shortly',
        'timeout',
      ],
    ])(
      'should answer a store that is %s with a 503 in the words of the route, and count it',
      async (_case, error, config, message, kind) => {
        const { filter, host, sent, counted } = setup(config);
        filter.catch(error, host);
        expect(sent).toEqual({ status: 503, body: { error: 503, message }, headers: JSON_TYPE });
        expect(await counted(kind)).toBe(1);
        expect(logged).not.toHaveBeenCalled();
      },
    );
  });

  describe('when the client has gone', () => {
    it("should answer nothing and log no failure for Node's aborted error or a 4xx of the cut body", () => {
      const logs = jest.spyOn(Logger.prototype, 'log').mockImplementation(() => undefined);
      try {
        const aborted = Object.assign(new Error('aborted'), { code: 'ECONNRESET' });
        for (const [error, raw] of [
          [aborted, {}],
          [new BadRequestException('body ended early'), { aborted: true }],
        ] as const) {
          const { filter, host, sent } = setup({}, raw);
          filter.catch(error, host);
          expect(sent.status).toBeUndefined();
        }
        expect(logged).not.toHaveBeenCalled();
        expect(logs).toHaveBeenCalledWith('Request req-42 aborted by the client before its body was read');
      } finally {
        logs.mockRestore();
      }
    });

    it('should still log a failure of the service as one', () => {
      const { filter, host } = setup({}, { aborted: true });
      filter.catch(new StorageError('SQLite failed to store a plant', { cause: new Error('disk I/O error') }), host);
      expect(logged).toHaveBeenCalledTimes(1);
      expect(String(logged.mock.calls[0][0])).toMatch(/^Request req-42 failed: StorageError/);
    });
  });

  it('should answer an unexpected error with a generic 500 and log its detail and cause', async () => {
    const { filter, host, sent, counted } = setup();
    const cause = new Error('SQLITE_IOERR: disk I/O error at /var/lib/secret/path.db');
    filter.catch(new StorageError('SQLite failed to store a plant', { cause }), host);
    expect(sent.body).toEqual({ error: 500, message: 'Internal server error' });
    expect(sent.status).toBe(500);
    expect(logged).toHaveBeenCalledTimes(1);
    expect(String(logged.mock.calls[0][0])).toContain('SQLITE_IOERR: disk I/O error');
    expect(String(logged.mock.calls[0][0])).toMatch(/^Request req-42 failed: StorageError: SQLite failed/);
    expect(await counted('failure')).toBe(1);
  });

  it("should answer a repository's ResourceConflictError as a 409 in its own words, and log nothing", () => {
    const { filter, host, sent } = setup();
    filter.catch(new ResourceConflictError('A widget with id 7 already exists with other content'), host);
    expect(sent.body).toEqual({ error: 409, message: 'A widget with id 7 already exists with other content' });
    expect(logged).not.toHaveBeenCalled();
  });

  it('should not pass the message of a thrown 5xx HttpException to the client', () => {
    const { filter, host, sent } = setup();
    filter.catch(new HttpException('connection string postgres://user:pw@db', 502), host);
    expect(sent.body).toEqual({ error: 500, message: 'Internal server error' });
  });

  it('should answer a thrown non-Error value with a generic 500', () => {
    const { filter, host, sent } = setup();
    filter.catch('a string', host);
    expect(sent.body).toEqual({ error: 500, message: 'Internal server error' });
  });

  it.each([
    [false, 'Bearer realm="plant-store"'],
    [true, 'Bearer realm="plant-store", error="invalid_token"'],
  ])('should send the WWW-Authenticate challenge with a 401 (token presented: %s)', (presented, challenge) => {
    const { filter, host, sent } = setup();
    filter.catch(new InvalidCredentialsException('Bearer token is invalid or expired', presented), host);
    expect(sent).toEqual({
      status: 401,
      body: { error: 401, message: 'Bearer token is invalid or expired' },
      headers: { 'WWW-Authenticate': challenge, ...JSON_TYPE },
    });
  });
});
