import fastify from 'fastify';
import { OpenAPIObject } from '@nestjs/swagger';
import { serializationSchema, serializeResponsesAsDocumented } from './documented-responses';

const DOCUMENT = {
  openapi: '3.1.0',
  info: { title: 'test', version: '1' },
  paths: {
    '/things/{id}': {
      get: {
        responses: {
          '200': { content: { 'application/json': { schema: { $ref: '#/components/schemas/Thing' } } } },
          '404': { content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } } },
        },
      },
    },
    '/labels': {
      get: {
        responses: {
          '200': { content: { 'application/json': { schema: { type: 'array', items: { type: 'string' } } } } },
        },
      },
    },
  },
  components: {
    schemas: {
      Thing: {
        type: 'object',
        required: ['id'],
        properties: {
          id: { type: 'integer', format: 'int64', description: 'exact', example: 10 },
          owner: { description: 'who', allOf: [{ $ref: '#/components/schemas/Owner' }] },
        },
      },
      Owner: { type: 'object', properties: { name: { type: 'string', maxLength: 5 } } },
      Error: { type: 'object', properties: { error: { type: 'integer', format: 'int32' } } },
    },
  },
} as unknown as OpenAPIObject;

describe('serializeResponsesAsDocumented', () => {
  it('should reduce a documented schema to what the serializer writes by, references inlined', () => {
    expect(serializationSchema({ $ref: '#/components/schemas/Thing' }, DOCUMENT)).toEqual({
      type: 'object',
      required: ['id'],
      properties: {
        id: { type: 'integer' },
        owner: { type: 'object', properties: { name: { type: 'string' } } },
      },
    });
  });

  describe('when a route is added', () => {
    const serve = async (url: string, result: unknown) => {
      const app = fastify();
      serializeResponsesAsDocumented(app, DOCUMENT);
      app.get(url, () => result);
      return app.inject({ method: 'GET', url: url.replace(':id', '7') });
    };

    it('should write an int64 response exactly, and only its declared properties', async () => {
      const res = await serve('/things/:id', { id: 2n ** 63n - 1n, owner: { name: 'Ann', secret: 'x' }, extra: 1 });
      expect(res.body).toBe('{"id":9223372036854775807,"owner":{"name":"Ann"}}');
    });

    it('should leave a response without an int64 on the stock serializer', async () => {
      const res = await serve('/labels', ['a', 'b']);
      expect(res.body).toBe('["a","b"]');
    });

    it('should keep a response schema the route declares itself', async () => {
      const app = fastify();
      serializeResponsesAsDocumented(app, DOCUMENT);
      app.get(
        '/things/:id',
        { schema: { response: { 200: { type: 'object', properties: { id: { type: 'string' } } } } } },
        () => ({
          id: 5n,
          owner: { name: 'Ann' },
        }),
      );
      expect((await app.inject({ method: 'GET', url: '/things/5' })).body).toBe('{"id":"5"}');
    });
  });
});
