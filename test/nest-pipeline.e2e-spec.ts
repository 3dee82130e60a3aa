import {
  BadRequestException,
  CallHandler,
  CanActivate,
  Controller,
  ExecutionContext,
  Get,
  Header,
  HttpCode,
  Injectable,
  NestInterceptor,
  Param,
  PipeTransform,
  Query,
  Res,
  UnauthorizedException,
  UseGuards,
  UseInterceptors,
  UsePipes,
} from '@nestjs/common';
import { GuardsConsumer } from '@nestjs/core/guards/guards-consumer';
import { FastifyAdapter, NestFastifyApplication } from '@nestjs/platform-fastify';
import { Test } from '@nestjs/testing';
import { FastifyReply } from 'fastify';
import { map, Observable, of } from 'rxjs';
import { request } from './support/http';

/**
 * Nest's request pipeline as this service runs it: `@nestjs/core` carries our patch
 * (patches/@nestjs+core+*.patch, applied by `npm ci`), which chains guards, pipes, the handler and the
 * response without a promise when no step returns one. These are the behaviours it must keep, over
 * real HTTP on Fastify, for every mix of synchronous and asynchronous steps; they hold on the
 * unpatched core too, so a Nest upgrade that drops the patch keeps them, and only the first test fails.
 */

const allow = (answer: () => ReturnType<CanActivate['canActivate']>) =>
  class implements CanActivate {
    canActivate(): ReturnType<CanActivate['canActivate']> {
      return answer();
    }
  };

@Injectable()
class Doubled implements PipeTransform {
  transform(value: string): number {
    const n = Number(value);
    if (!Number.isInteger(n)) throw new BadRequestException(`not an integer: ${value}`);
    return n * 2;
  }
}

@Injectable()
class Later implements PipeTransform {
  async transform(value: string): Promise<string> {
    await new Promise((resolve) => setTimeout(resolve, 5));
    if (value === 'no') throw new BadRequestException('refused later');
    return `${value}!`;
  }
}

@Injectable()
class Wrapped implements NestInterceptor {
  intercept(_context: ExecutionContext, next: CallHandler): Observable<unknown> {
    return next.handle().pipe(map((value) => ({ wrapped: value })));
  }
}

@Controller()
class PipelineController {
  @Get('sync/:n')
  sync(@Param('n', Doubled) n: number): { n: number } {
    return { n };
  }

  @Get('promise/:n')
  async promise(@Param('n', Doubled) n: number): Promise<{ n: number }> {
    await new Promise((resolve) => setTimeout(resolve, 1));
    return { n };
  }

  @Get('observable')
  observable(): Observable<{ from: string }> {
    return of({ from: 'observable' });
  }

  @Get('mixed/:n')
  mixed(@Param('n', Doubled) n: number, @Query('word', Later) word: string): { n: number; word: string } {
    return { n, word };
  }

  @Get('throws')
  throws(): never {
    throw new UnauthorizedException('thrown by the handler');
  }

  @Get('rejects')
  async rejects(): Promise<never> {
    await Promise.resolve();
    throw new BadRequestException('rejected by the handler');
  }

  @Get('crashes')
  crashes(): never {
    throw new Error('a bug');
  }

  @Get('status')
  @HttpCode(202)
  @Header('x-custom', 'yes')
  status(): { ok: boolean } {
    return { ok: true };
  }

  @Get('passthrough')
  passthrough(@Res({ passthrough: true }) reply: FastifyReply): { ok: boolean } {
    void reply.header('x-passthrough', '1');
    return { ok: true };
  }

  @Get('manual')
  manual(@Res() reply: FastifyReply): void {
    setTimeout(() => void reply.code(201).send({ manual: true }), 5);
  }

  @Get('guarded/false')
  @UseGuards(allow(() => false))
  guardedFalse(): string {
    return 'never';
  }

  @Get('guarded/throws')
  @UseGuards(
    allow(() => {
      throw new UnauthorizedException('thrown by the guard');
    }),
  )
  guardedThrows(): string {
    return 'never';
  }

  @Get('guarded/promise')
  @UseGuards(allow(() => true), allow(async () => Promise.resolve(true)), allow(() => true))
  guardedPromise(): { guarded: string } {
    return { guarded: 'promise' };
  }

  @Get('guarded/observable-false')
  @UseGuards(allow(() => of(false)))
  guardedObservableFalse(): string {
    return 'never';
  }

  @Get('guarded/rejects')
  @UseGuards(allow(() => Promise.reject(new UnauthorizedException('rejected by the guard'))))
  guardedRejects(): string {
    return 'never';
  }

  @Get('intercepted/:n')
  @UseInterceptors(Wrapped)
  intercepted(@Param('n', Doubled) n: number): { n: number } {
    return { n };
  }

  @Get('intercepted-promise/:n')
  @UseInterceptors(Wrapped)
  async interceptedPromise(@Param('n', Doubled) n: number): Promise<{ n: number }> {
    await Promise.resolve();
    return { n };
  }

  @Get('pipes-on-method/:word')
  @UsePipes(Later)
  pipesOnMethod(@Param('word') word: string): { word: string } {
    return { word };
  }
}

describe('Nest request pipeline on Fastify (patched @nestjs/core)', () => {
  let app: NestFastifyApplication;
  let url: string;
  const unhandled: unknown[] = [];
  const onUnhandled = (reason: unknown) => unhandled.push(reason);

  beforeAll(async () => {
    process.on('unhandledRejection', onUnhandled);
    const moduleRef = await Test.createTestingModule({ controllers: [PipelineController] }).compile();
    const adapter = new FastifyAdapter();
    // An asynchronous onSend hook: the reply is not sent when `send()` returns.
    adapter.getInstance().addHook('onSend', async (req, _reply, payload) => {
      if (req.headers['x-slow-send'] === undefined) return payload;
      await new Promise((resolve) => setTimeout(resolve, 5));
      return payload;
    });
    app = moduleRef.createNestApplication<NestFastifyApplication>(adapter, { logger: false });
    await app.listen(0, '127.0.0.1');
    url = await app.getUrl();
  });

  afterAll(async () => {
    await app.close();
    process.off('unhandledRejection', onUnhandled);
  });

  afterEach(() => expect(unhandled).toEqual([]));

  const get = (path: string, headers: Record<string, string> = {}) =>
    request(`${url}${path}`, { method: 'GET', auth: false, headers });

  it('runs with the patch applied: guards that answer with booleans are not awaited', () => {
    const consumer = new GuardsConsumer();
    const answer = consumer.tryActivate([{ canActivate: () => true }], [], new PipelineController(), () => undefined);
    expect(answer).toBe(true);
  });

  it.each([
    ['/sync/21', 200, { n: 42 }],
    ['/promise/21', 200, { n: 42 }],
    ['/observable', 200, { from: 'observable' }],
    ['/mixed/2?word=yes', 200, { n: 4, word: 'yes!' }],
    ['/status', 202, { ok: true }],
    ['/passthrough', 200, { ok: true }],
    ['/manual', 201, { manual: true }],
    ['/guarded/promise', 200, { guarded: 'promise' }],
    ['/intercepted/4', 200, { wrapped: { n: 8 } }],
    ['/intercepted-promise/4', 200, { wrapped: { n: 8 } }],
    ['/pipes-on-method/hi', 200, { word: 'hi!' }],
  ])('answers GET %s with %i and its body', async (path, status, body) => {
    const result = await get(path);
    expect(result.status).toBe(status);
    expect(result.body).toEqual(body);
  });

  it.each([
    ['/sync/x', 400, 'not an integer: x'],
    ['/mixed/x?word=yes', 400, 'not an integer: x'],
    ['/mixed/2?word=no', 400, 'refused later'],
    ['/mixed/x?word=no', 400, 'not an integer: x'],
    ['/throws', 401, 'thrown by the handler'],
    ['/rejects', 400, 'rejected by the handler'],
    ['/crashes', 500, 'Internal server error'],
    ['/guarded/false', 403, 'Forbidden resource'],
    ['/guarded/throws', 401, 'thrown by the guard'],
    ['/guarded/observable-false', 403, 'Forbidden resource'],
    ['/guarded/rejects', 401, 'rejected by the guard'],
    ['/intercepted/x', 400, 'not an integer: x'],
    ['/pipes-on-method/no', 400, 'refused later'],
  ])('answers GET %s with %i through the exception handler', async (path, status, message) => {
    const result = await get(path);
    expect(result.status).toBe(status);
    expect(result.body).toMatchObject({ statusCode: status, message });
  });

  it('sets the route status and headers before the handler runs', async () => {
    const result = await get('/status');
    expect(result.headers.get('x-custom')).toBe('yes');
    expect((await get('/passthrough')).headers.get('x-passthrough')).toBe('1');
  });

  it('waits for a reply still being sent (an asynchronous onSend hook) and sends it whole', async () => {
    const results = await Promise.all([
      get('/sync/5', { 'x-slow-send': '1' }),
      get('/promise/6', { 'x-slow-send': '1' }),
      get('/intercepted/7', { 'x-slow-send': '1' }),
    ]);
    expect(results.map(({ status, body }) => [status, body])).toEqual([
      [200, { n: 10 }],
      [200, { n: 12 }],
      [200, { wrapped: { n: 14 } }],
    ]);
  });
});
