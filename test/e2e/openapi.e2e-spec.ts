import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import Ajv, { ValidateFunction } from 'ajv';
import { createOpenApiDocument } from '../../src/openapi/openapi-document';
import { request } from '../support/http';
import { createTestApp, TestApp } from '../support/test-app';

type Doc = Record<string, any>;

describe('OpenAPI document (e2e)', () => {
  let server: TestApp;
  let served: Doc;
  let ajv: Ajv;
  const schema = (name: string): ValidateFunction => ajv.getSchema(`openapi#/components/schemas/${name}`)!;

  beforeAll(async () => {
    server = await createTestApp();
    served = (await request(`${server.url}/docs-json`, { method: 'GET', auth: false })).body as Doc;
    ajv = new Ajv({ strict: false, allErrors: true });
    ajv.addFormat('int32', {
      type: 'number',
      validate: (n: number) => Number.isInteger(n) && n >= -(2 ** 31) && n < 2 ** 31,
    });
    ajv.addFormat('int64', { type: 'number', validate: (n: number) => Number.isInteger(n) });
    ajv.addSchema(served, 'openapi');
  });
  afterAll(() => server.destroy());

  it('should equal the committed openapi.json (run `npm run openapi` after changing the API)', () => {
    const committed = JSON.parse(readFileSync(join(__dirname, '..', '..', 'openapi.json'), 'utf8'));
    expect(served).toEqual(committed);
    expect(JSON.parse(JSON.stringify(createOpenApiDocument(server.app)))).toEqual(committed);
  });

  describe('the contract it states', () => {
    it('should carry the title, version 1.0.0 and a global bearer scheme', () => {
      expect(served.info).toMatchObject({ title: 'Plant Store', version: '1.0.0' });
      expect(served.components.securitySchemes).toEqual({ bearer: { type: 'http', scheme: 'bearer' } });
      expect(served.security).toEqual([{ bearer: [] }]);
      expect(Object.keys(served.paths)).toEqual(['/plants', '/health/live', '/health/ready']);
      expect(served.paths['/health/live'].get.security).toEqual([]);
      expect(served.paths['/health/ready'].get.security).toEqual([]);
    });

    it('should require a NewPlant body: id int64 and name required, tag optional', () => {
      const operation = served.paths['/plants'].post;
      expect(operation.requestBody).toEqual({
        required: true,
        content: { 'application/json': { schema: { $ref: '#/components/schemas/NewPlant' } } },
      });
      const newPlant = served.components.schemas.NewPlant;
      expect(newPlant.required).toEqual(['id', 'name']);
      expect(newPlant.properties.id).toMatchObject({ type: 'integer', format: 'int64' });
      expect(newPlant.properties.name).toMatchObject({ type: 'string', minLength: 1, maxLength: 200 });
      expect(newPlant.properties.tag).toMatchObject({ type: 'string', minLength: 1, maxLength: 100 });
    });

    it('should answer 200 with a Plant that has no id, and every failure with Error', () => {
      const { responses } = served.paths['/plants'].post;
      expect(responses['200'].content['application/json'].schema).toEqual({ $ref: '#/components/schemas/Plant' });
      expect(Object.keys(served.components.schemas.Plant.properties)).toEqual(['name', 'tag']);
      expect(served.components.schemas.Plant.required).toEqual(['name']);
      for (const status of ['400', '401', '409', '413', '415', '429', '500', '503']) {
        expect(responses[status].content['application/json'].schema).toEqual({ $ref: '#/components/schemas/Error' });
      }
      expect(served.components.schemas.Error).toMatchObject({
        required: ['error', 'message'],
        properties: { error: { type: 'integer', format: 'int32' }, message: { type: 'string' } },
      });
    });
  });

  describe('real responses against its schemas', () => {
    it.each<[string, unknown, string]>([
      ['a created plant', { id: 11, name: 'Monstera', tag: 'tropical' }, 'Plant'],
      ['a plant without tag', { id: 12, name: 'Fern' }, 'Plant'],
      ['an invalid body', { id: '7', name: 5 }, 'Error'],
      ['a conflict', { id: 11, name: 'Other' }, 'Error'],
      ['malformed JSON', '{"id":', 'Error'],
    ])('should validate %s', async (_label, body, name) => {
      const res = await request(`${server.url}/plants`, { body });
      const validate = schema(name);
      expect(validate(res.body)).toBe(true);
      expect(validate.errors ?? []).toEqual([]);
      const documented = served.paths['/plants'].post.responses[String(res.status)];
      expect(documented.content['application/json'].schema.$ref).toBe(`#/components/schemas/${name}`);
    });

    it.each<[string, Record<string, string>, number]>([
      ['a 401', { authorization: 'Bearer wrong' }, 401],
      ['a 415', { 'content-type': 'text/plain' }, 415],
    ])('should validate the Error body of %s', async (_label, headers, status) => {
      const res = await request(`${server.url}/plants`, { body: '{}', headers });
      expect(res.status).toBe(status);
      expect(schema('Error')(res.body)).toBe(true);
    });

    it('should agree with the service on which names are valid', async () => {
      const newPlant = schema('NewPlant');
      for (const name of ['🌿 Fern', 'a'.repeat(200)]) {
        expect(newPlant({ id: 1, name })).toBe(true);
        expect((await request(`${server.url}/plants`, { body: { id: 20 + name.length, name } })).status).toBe(200);
      }
      for (const name of ['', 'a\u0000b', 'a'.repeat(201)]) {
        expect(newPlant({ id: 1, name })).toBe(false);
        expect((await request(`${server.url}/plants`, { body: { id: 30, name } })).status).toBe(400);
      }
    });
  });
});
