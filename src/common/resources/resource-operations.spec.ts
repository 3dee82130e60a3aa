import { Body, Controller, Delete, Get, HttpCode, HttpStatus, INestApplication, Param, Post } from '@nestjs/common';
import { FastifyAdapter } from '@nestjs/platform-fastify';
import { ApiSchema, DocumentBuilder, OpenAPIObject, SwaggerModule } from '@nestjs/swagger';
import { Test } from '@nestjs/testing';
import { ParseInt64Pipe } from '../int64/parse-int64.pipe';
import { Int64Property } from '../int64/int64-property.decorator';
import { CreateOnceOperation } from './create-once-operation.decorator';
import { DeleteOperation } from './delete-operation.decorator';
import { GetByIdOperation } from './get-by-id-operation.decorator';
import { ListOperation } from './list-operation.decorator';
import { conflictMessage, notFoundMessage, pascalName, withArticle } from './resource-name';

@ApiSchema({ name: 'NewSoilSample' })
class NewSoilSampleDto {
  @Int64Property()
  id!: bigint;
}

@Controller('soil-samples')
class SoilSamplesController {
  @Post()
  @HttpCode(HttpStatus.OK)
  @CreateOnceOperation('soil sample', NewSoilSampleDto)
  create(@Body() sample: NewSoilSampleDto): NewSoilSampleDto {
    return sample;
  }

  @Get()
  @ListOperation('/soil-samples', NewSoilSampleDto)
  list(): NewSoilSampleDto[] {
    return [];
  }

  @Get(':id')
  @GetByIdOperation('soil sample', NewSoilSampleDto, { description: 'Reads one sample.' })
  get(@Param('id', ParseInt64Pipe) id: bigint): NewSoilSampleDto {
    return { id };
  }

  @Delete(':id')
  @HttpCode(HttpStatus.NO_CONTENT)
  @DeleteOperation('soil sample')
  delete(): void {}
}

describe('resource names', () => {
  it('should build names, articles and messages from the words of the name', () => {
    expect(pascalName('soil sample')).toBe('SoilSample');
    expect(pascalName('plant')).toBe('Plant');
    expect([withArticle('plant'), withArticle('orchid'), withArticle('hour', { article: 'an' })]).toEqual([
      'a plant',
      'an orchid',
      'an hour',
    ]);
    expect(notFoundMessage('plant', 10n)).toBe('No plant with id 10');
    expect(conflictMessage('orchid', -1n)).toBe('An orchid with id -1 already exists with different content');
    expect(conflictMessage('plant', 10, { differs: 'a different name or tag' })).toBe(
      'A plant with id 10 already exists with a different name or tag',
    );
  });
});

describe('CreateOnceOperation, ListOperation, GetByIdOperation and DeleteOperation', () => {
  let app: INestApplication;
  let document: OpenAPIObject;

  beforeAll(async () => {
    const moduleRef = await Test.createTestingModule({ controllers: [SoilSamplesController] }).compile();
    app = moduleRef.createNestApplication(new FastifyAdapter());
    await app.init();
    document = SwaggerModule.createDocument(app, new DocumentBuilder().build());
  });
  afterAll(() => app.close());

  const example = (operation: 'post' | 'get' | 'delete', path: string, status: number): unknown =>
    (document.paths[path][operation]?.responses[status] as { content: Record<string, { example: unknown }> }).content[
      'application/json'
    ].example;

  it('should name the create operation after the resource, with only a 200 as success', () => {
    const create = document.paths['/soil-samples'].post;
    expect(create?.operationId).toBe('createSoilSample');
    expect(create?.summary).toBe('Create a soil sample');
    expect(create?.description).toMatch(/^Creates a soil sample\.\n\nA 200 means the soil sample is durably stored/);
    expect(Object.keys(create?.responses ?? {})).toEqual(
      expect.arrayContaining(['200', '400', '401', '409', '413', '415', '429', '500', '503']),
    );
    expect(create?.responses['201']).toBeUndefined();
  });

  it('should give each failure of the create an example it really answers', () => {
    expect(example('post', '/soil-samples', 409)).toEqual({
      error: 409,
      message: 'A soil sample with id 10 already exists with different content',
    });
    expect(example('post', '/soil-samples', 400)).toEqual({
      error: 400,
      message: 'id must be an integer in the int64 range',
    });
    expect(document.paths['/soil-samples'].post?.responses['400']).toMatchObject({
      description: expect.stringContaining('or is not a valid NewSoilSample.'),
    });
    expect(example('post', '/soil-samples', 503)).toEqual({
      error: 503,
      message: 'The database is unavailable; the soil sample was not stored, retry shortly',
    });
  });

  it('should document the get by id with its int64 path id and its by-id failures', () => {
    const get = document.paths['/soil-samples/{id}'].get;
    expect(get?.operationId).toBe('getSoilSample');
    expect(get?.summary).toBe('Get a soil sample');
    expect(get?.description).toBe('Reads one sample.');
    expect(get?.parameters).toEqual([
      expect.objectContaining({ name: 'id', in: 'path', schema: expect.objectContaining({ format: 'int64' }) }),
    ]);
    expect(Object.keys(get?.responses ?? {})).toEqual(
      expect.arrayContaining(['200', '400', '401', '404', '414', '429', '500', '503']),
    );
    expect(example('get', '/soil-samples/{id}', 404)).toEqual({ error: 404, message: 'No soil sample with id 10' });
    expect(example('get', '/soil-samples/{id}', 400)).toEqual({
      error: 400,
      message: 'id must be a decimal integer in the int64 range',
    });
  });

  it('should name the list after the path, with its page of items and the Link header of the next one', () => {
    const list = document.paths['/soil-samples'].get;
    expect(list?.operationId).toBe('listSoilSamples');
    expect(list?.summary).toBe('List soil samples');
    expect(list?.description).toMatch(/^Lists soil samples in id order \(negative ids first\), a page at a time\./);
    expect(Object.keys(list?.responses ?? {})).toEqual(
      expect.arrayContaining(['200', '400', '401', '408', '429', '431', '500', '503']),
    );
    const ok = list?.responses['200'] as { content: object; headers: Record<string, { schema: { example: string } }> };
    expect(ok.content).toEqual({
      'application/json': {
        schema: { type: 'array', items: { $ref: '#/components/schemas/NewSoilSample' }, maxItems: 1000 },
      },
    });
    expect(ok.headers.Link.schema.example).toBe('</soil-samples?limit=100&after=10>; rel="next"');
    expect(example('get', '/soil-samples', 400)).toEqual({
      error: 400,
      message: 'limit must be a decimal integer from 1 to 1000',
    });
  });

  it('should document the delete with its 204 alone as success, its int64 path id and its by-id failures', () => {
    const remove = document.paths['/soil-samples/{id}'].delete;
    expect(remove?.operationId).toBe('deleteSoilSample');
    expect(remove?.summary).toBe('Delete a soil sample');
    expect(remove?.description).toBe(
      'Deletes one soil sample. Creating its id again afterwards is a new soil sample, not a replay.',
    );
    expect(remove?.parameters).toEqual([
      expect.objectContaining({ name: 'id', in: 'path', schema: expect.objectContaining({ format: 'int64' }) }),
    ]);
    expect(Object.keys(remove?.responses ?? {}).sort()).toEqual(
      ['204', '400', '401', '404', '408', '413', '414', '415', '429', '431', '500', '503'].sort(),
    );
    expect(example('delete', '/soil-samples/{id}', 404)).toEqual({ error: 404, message: 'No soil sample with id 10' });
    expect(example('delete', '/soil-samples/{id}', 503)).toEqual({
      error: 503,
      message: 'The database is unavailable; the soil sample was not deleted, retry shortly',
    });
  });
});
