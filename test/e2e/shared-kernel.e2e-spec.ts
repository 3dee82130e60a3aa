import { Controller, Get, Param, Query, Res } from '@nestjs/common';
import { ApiOkResponse, ApiProperty } from '@nestjs/swagger';
import { FastifyReply } from 'fastify';
import { ApiErrorResponses, PROTECTED_OPERATION_ERRORS } from '../../src/common/errors/api-error-responses.decorator';
import { ParseInt64Pipe } from '../../src/common/int64/parse-int64.pipe';
import { ApiPageResponse } from '../../src/common/paging/api-page-response.decorator';
import { nextPageLink, pageOf } from '../../src/common/paging/page';
import { PageQueryDto } from '../../src/common/paging/page-query.dto';
import { request } from '../support/http';
import { createTestApp, TestApp } from '../support/test-app';

/** A response DTO of a resource the app does not have: an int64 id, and no hand-kept serialization. */
class GadgetDto {
  @ApiProperty({ type: 'integer', format: 'int64' })
  id!: bigint;

  @ApiProperty()
  label!: string;
}

const GADGETS = [-(2n ** 63n), 9007199254740993n, 2n ** 63n - 1n].map((id) => ({ id, label: `gadget ${id}` }));

/** A second resource built from the shared kernel alone: int64 path and cursor, paging, Link, error docs. */
@Controller('gadgets')
class GadgetsController {
  @Get()
  @ApiPageResponse(GadgetDto, '/gadgets', 'A page of gadgets.')
  @ApiErrorResponses({ ...PROTECTED_OPERATION_ERRORS, 400: 'A query parameter is not valid.' })
  list(@Query() query: PageQueryDto, @Res({ passthrough: true }) reply: FastifyReply): object[] {
    const after = query.after ?? -(2n ** 63n) - 1n;
    const page = pageOf(
      GADGETS.filter(({ id }) => id > after).slice(0, query.limit + 1),
      query.limit,
      (gadget) => gadget.id,
    );
    if (page.next !== undefined)
      void reply.header('link', nextPageLink('/gadgets', { limit: query.limit, after: page.next }));
    // A property the DTO does not declare never reaches the client.
    return page.items.map((gadget) => ({ ...gadget, internal: 'not for clients' }));
  }

  @Get(':id')
  @ApiOkResponse({ type: GadgetDto })
  @ApiErrorResponses({ ...PROTECTED_OPERATION_ERRORS, 400: 'The id in the path is not a decimal int64.' })
  get(@Param('id', ParseInt64Pipe) id: bigint): GadgetDto {
    return { id, label: 'read back' };
  }
}

describe('The shared kernel, used by a resource the app does not have (e2e)', () => {
  let server: TestApp;

  beforeAll(async () => {
    server = await createTestApp({}, undefined, [GadgetsController]);
  });
  afterAll(() => server.destroy());

  const get = (path: string) => request(`${server.url}${path}`, { method: 'GET' });

  it('should write an int64 of a response DTO exactly, with only the declared properties', async () => {
    const res = await get('/gadgets/9223372036854775807');
    expect(res.status).toBe(200);
    expect(res.text).toBe('{"id":9223372036854775807,"label":"read back"}');
  });

  it('should page by the int64 cursor and link the next page', async () => {
    const first = await get('/gadgets?limit=2');
    expect(first.text).toBe(
      '[{"id":-9223372036854775808,"label":"gadget -9223372036854775808"},' +
        '{"id":9007199254740993,"label":"gadget 9007199254740993"}]',
    );
    expect(first.headers.get('link')).toBe('</gadgets?limit=2&after=9007199254740993>; rel="next"');
    const last = await get('/gadgets?limit=2&after=9007199254740993');
    expect(last.text).toBe('[{"id":9223372036854775807,"label":"gadget 9223372036854775807"}]');
    expect(last.headers.get('link')).toBeNull();
  });

  it('should answer a bad path id or cursor with the Error body naming it', async () => {
    expect((await get('/gadgets/9223372036854775808')).body).toEqual({
      error: 400,
      message: 'id must be a decimal integer in the int64 range',
    });
    expect((await get('/gadgets?after=1.5')).body).toEqual({
      error: 400,
      message: 'after must be a decimal integer in the int64 range',
    });
  });

  it('should document the shared failures of a protected operation with neutral examples', async () => {
    const document = (await get('/docs-json')).body as { paths: Record<string, { get: { responses: object } }> };
    type Documented = { description: string; content: { 'application/json': { example?: { message: string } } } };
    const responses = document.paths['/gadgets/{id}'].get.responses as Record<string, Documented>;
    expect(Object.keys(responses).sort()).toEqual(['200', '400', '401', '408', '429', '431', '500']);
    const words = Object.values(responses).flatMap(({ description, content }) => [
      description,
      content['application/json'].example?.message ?? '',
    ]);
    expect(words.filter((text) => /plant/i.test(text))).toEqual([]);
  });
});
