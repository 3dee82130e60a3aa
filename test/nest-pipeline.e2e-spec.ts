import {
  BadRequestException,
  CallHandler,
  CanActivate,
  Controller,
  createParamDecorator,
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
import { FastifyAdapter, NestFastifyApplication } from '@nestjs/platform-fastify';
import { Test } from '@nestjs/testing';
import { FastifyReply } from 'fastify';
import { map, Observable, of } from 'rxjs';
import { request } from './support/http';

/** What the parameter decorators and pipes below were called with, in order, for one request. */
const calls: string[] = [];
/** A parameter decorator that refuses a caller without `x-user`, synchronously. */
const CurrentUser = createParamDecorator((_data: unknown, context: ExecutionContext) => {
  const user = context.switchToHttp().getRequest<{ headers: Record<string, string | undefined> }>().headers['x-user'];
  if (user === undefined) throw new UnauthorizedException('no user');
  return user;
});
/** A parameter decorator whose value is a promise. */
const AsyncUser = createParamDecorator(async (_data: unknown, context: ExecutionContext) => {
  await new Promise((resolve) => setTimeout(resolve, 1));
  return {
    name: context.switchToHttp().getRequest<{ headers: Record<string, string | undefined> }>().headers['x-user'],
  };
});

/**
 * Nest's request pipeline as this service runs it, on stock `@nestjs/core`: the behaviours the service
 * relies on, over real HTTP on Fastify, for every mix of synchronous and asynchronous guards, pipes,
 * handlers and interceptors. A Nest upgrade that changes one fails here. docs/nest-router-proposal.md
 * has the synchronous fast paths we once patched in, and must keep these behaviours too.
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
class NameOf implements PipeTransform {
  transform(value: { name?: string }): string | undefined {
    return value.name;
  }
}

@Injectable()
class Noted implements PipeTransform {
  transform(value: string): string {
    calls.push(`pipe(${value})`);
    return value;
  }
}
const NotedValue = (name: string) =>
  createParamDecorator((data: string) => {
    calls.push(`value(${data})`);
    return data;
  })(name, Noted);

/** Answers an object whose `then` cannot be read (a revoked proxy, as a finished Immer draft is). */
@Injectable()
class Unreadable implements PipeTransform {
  transform(): object {
    const { proxy, revoke } = Proxy.revocable({}, {});
    revoke();
    return proxy;
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

  @Get('guarded/throws/:n')
  @UseGuards(
    allow(() => {
      throw new UnauthorizedException('thrown by the guard');
    }),
  )
  guardedThrowsBeforePipe(@Param('n', Doubled) n: number): { n: number } {
    return { n };
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

  // Nest lists a handler's parameters last first: `q`'s pipe runs before the user is read.
  @Get('user-then-later/:q')
  userThenLater(@CurrentUser() user: string, @Param('q', Later) q: string): { user: string; q: string } {
    return { user, q };
  }

  @Get('user-then-sync/:n')
  userThenSync(@CurrentUser() user: string, @Param('n', Doubled) n: number): { user: string; n: number } {
    return { user, n };
  }

  @Get('async-user')
  asyncUser(@AsyncUser(NameOf) name: string): { name: string } {
    return { name };
  }

  @Get('order')
  order(@NotedValue('a') a: string, @NotedValue('b') b: string): { a: string; b: string } {
    return { a, b };
  }

  @Get('both-refused')
  bothRefused(@Query('a', Doubled, Doubled) a: number, @Query('b', Doubled) b: number): { a: number; b: number } {
    return { a, b };
  }

  @Get('unreadable')
  unreadable(@Query('later', Later) later: string, @Query('now', Unreadable) now: object): object {
    return { later, now };
  }

  @Get('pipes-on-method/:word')
  @UsePipes(Later)
  pipesOnMethod(@Param('word') word: string): { word: string } {
    return { word };
  }
}

describe('Nest request pipeline on Fastify', () => {
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
    // Guards run before any pipe (CONTRACT.md: authentication before validation).
    ['/guarded/throws/x', 401, 'thrown by the guard'],
    ['/guarded/observable-false', 403, 'Forbidden resource'],
    ['/guarded/rejects', 401, 'rejected by the guard'],
    ['/intercepted/x', 400, 'not an integer: x'],
    ['/pipes-on-method/no', 400, 'refused later'],
    // A parameter decorator that throws answers before another parameter's pipe refuses.
    ['/user-then-later/no', 401, 'no user'],
    ['/user-then-sync/x', 401, 'no user'],
    // Two parameters refused: the error of the one with the fewest pipes.
    ['/both-refused?a=x&b=y', 400, 'not an integer: y'],
  ])('answers GET %s with %i through the exception handler', async (path, status, message) => {
    const result = await get(path);
    expect(result.status).toBe(status);
    expect(result.body).toMatchObject({ statusCode: status, message });
  });

  it('hands the pipes of a parameter decorator that answers with a promise its value', async () => {
    const result = await get('/async-user', { 'x-user': 'ann' });
    expect(result.body).toEqual({ name: 'ann' });
  });

  // Nest 11 read every parameter before it ran any pipe; Nest 12 reads and pipes one parameter after
  // the other (last listed first). What the service relies on: each pipe once, after its own value.
  it("runs each parameter's pipes once, on its own value, after reading it", async () => {
    calls.length = 0;
    expect((await get('/order')).body).toEqual({ a: 'a', b: 'b' });
    expect(calls).toEqual(['value(b)', 'pipe(b)', 'value(a)', 'pipe(a)']);
  });

  it('leaves no promise unhandled when a parameter is refused while another one is still in its pipes', async () => {
    expect((await get('/user-then-later/no')).status).toBe(401);
    // `Later` refuses 5 ms after the 401 went out: the check after each test sees what it did.
    await new Promise((resolve) => setTimeout(resolve, 30));
  });

  it("refuses a pipe result whose `then` cannot be read, and leaves the other parameter's promise handled", async () => {
    expect((await get('/unreadable?later=no&now=x')).status).toBe(500);
    await new Promise((resolve) => setTimeout(resolve, 30));
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
