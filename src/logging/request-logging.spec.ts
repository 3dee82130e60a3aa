import Fastify from 'fastify';
import pino from 'pino';
import { LogConfig } from '../config/app-config';
import { logRequests } from './request-logging';

/** The request lines (route, level, msg) after a 200, a 404 and a 500, with `log` in force. */
async function linesOf(log: Partial<LogConfig>): Promise<[number, number, string][]> {
  const written: string[] = [];
  const logger = pino({ level: log.level ?? 'info' }, { write: (line: string) => written.push(line) });
  const fastify = Fastify();
  logRequests(fastify, logger, { level: 'info', format: 'json', requests: 'all', slowMs: 1000, ...log });
  fastify.get('/ok', () => 'ok');
  fastify.get('/broken', (_request, reply) => reply.code(500).send('broken'));
  for (const url of ['/ok', '/missing', '/broken']) await fastify.inject({ url });
  await fastify.close();
  return written
    .map((line) => JSON.parse(line) as { level: number; msg: string; res: { statusCode: number } })
    .map(({ res, level, msg }) => [res.statusCode, level, msg]);
}

const OK: [number, number, string] = [200, 30, 'request completed'];
const MISSING: [number, number, string] = [404, 30, 'request completed'];
const BROKEN: [number, number, string] = [500, 50, 'request errored'];

describe('logRequests', () => {
  it.each<[string, Partial<LogConfig>, [number, number, string][]]>([
    ['every request, a 4xx at info and a 5xx at error', { requests: 'all' }, [OK, MISSING, BROKEN]],
    ['the failures, each at its own level', { requests: 'failures' }, [MISSING, BROKEN]],
    ['a 2xx too when it took longer than slowMs', { requests: 'failures', slowMs: 0 }, [OK, MISSING, BROKEN]],
    ['what the level lets through: a 5xx at error', { requests: 'failures', level: 'error' }, [BROKEN]],
    ['nothing when off', { requests: 'off' }, []],
  ])('should log %s', async (_label, log, expected) => {
    expect(await linesOf(log)).toEqual(expected);
  });
});
