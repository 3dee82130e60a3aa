import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import Ajv, { ValidateFunction } from 'ajv';
import { Webhook } from 'standardwebhooks';
import { createApiDocument } from '../../src/api-document';
import { AppRoute, appRoutes } from '../support/app-routes';
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
    ajv.addFormat('date-time', /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)$/);
    ajv.addSchema(served, 'openapi');
  });
  afterAll(() => server.destroy());

  it('should equal the committed openapi.json (run `npm run openapi` after changing the API)', () => {
    const committed = JSON.parse(readFileSync(join(__dirname, '..', '..', 'openapi.json'), 'utf8'));
    expect(served).toEqual(committed);
    expect(JSON.parse(JSON.stringify(createApiDocument(server.app)))).toEqual(committed);
  });

  describe('the contract it states', () => {
    it('should carry the title, version 1.0.0 and a global bearer scheme', () => {
      expect(served.info).toMatchObject({ title: 'Plant Store', version: '1.0.0' });
      expect(served.components.securitySchemes).toEqual({ bearer: { type: 'http', scheme: 'bearer' } });
      expect(served.security).toEqual([{ bearer: [] }]);
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

    it('should declare the read and delete operations with every status they can answer', () => {
      const statuses = (path: string, method: string) => Object.keys(served.paths[path][method].responses).sort();
      expect(statuses('/plants', 'get')).toEqual(['200', '400', '401', '408', '429', '431', '500', '503']);
      expect(statuses('/plants', 'post')).toEqual([
        '200',
        '400',
        '401',
        '408',
        '409',
        '413',
        '415',
        '429',
        '431',
        '500',
        '503',
      ]);
      expect(statuses('/plants/{id}', 'get')).toEqual([
        '200',
        '400',
        '401',
        '404',
        '408',
        '414',
        '429',
        '431',
        '500',
        '503',
      ]);
      expect(statuses('/plants/{id}', 'delete')).toEqual([
        '204',
        '400',
        '401',
        '404',
        '408',
        '413',
        '414',
        '415',
        '429',
        '431',
        '500',
        '503',
      ]);
      expect(served.paths['/plants/{id}'].delete.responses['204'].content).toBeUndefined();
    });

    it('should bound limit and type after and {id} as int64', () => {
      const { parameters } = served.paths['/plants'].get;
      expect(parameters).toEqual([
        expect.objectContaining({
          name: 'limit',
          in: 'query',
          required: false,
          schema: expect.objectContaining({
            type: 'integer',
            format: 'int32',
            minimum: 1,
            maximum: 1000,
            default: 100,
          }),
        }),
        expect.objectContaining({
          name: 'after',
          in: 'query',
          required: false,
          schema: expect.objectContaining({ type: 'integer', format: 'int64' }),
        }),
      ]);
      for (const method of ['get', 'delete']) {
        expect(served.paths['/plants/{id}'][method].parameters).toEqual([
          expect.objectContaining({
            name: 'id',
            in: 'path',
            required: true,
            schema: { type: 'integer', format: 'int64', minimum: -(2 ** 63), maximum: 2 ** 63 },
          }),
        ]);
      }
    });

    it('should answer a list with an array of NewPlant and declare its Link header', () => {
      const ok = served.paths['/plants'].get.responses['200'];
      expect(ok.content['application/json'].schema).toEqual({
        type: 'array',
        items: { $ref: '#/components/schemas/NewPlant' },
        maxItems: 1000,
      });
      expect(ok.headers.Link.schema.type).toBe('string');
      expect(served.paths['/plants/{id}'].get.responses['200'].content['application/json'].schema).toEqual({
        $ref: '#/components/schemas/NewPlant',
      });
    });

    it('should declare Endpoint and Delivery with their fields', () => {
      expect(served.components.schemas.Endpoint.required).toEqual(
        expect.arrayContaining(['id', 'url', 'description', 'disabled', 'source', 'createdAt', 'updatedAt']),
      );
      expect(served.components.schemas.Delivery.properties.payload).toBeDefined();
    });

    it('should warn JavaScript clients about ids beyond 2^53 wherever an id is declared', () => {
      expect(served.components.schemas.NewPlant.properties.id.description).toContain('2^53');
      expect(served.paths['/plants/{id}'].get.parameters[0].description).toContain('2^53');
      expect(served.paths['/plants'].get.parameters[1].description).toContain('2^53');
    });

    it('should be OpenAPI 3.1 and declare the newPlant webhook: a NewPlant body, the signature headers, a 200', () => {
      expect(served.openapi).toBe('3.1.0');
      const { post } = served.webhooks.newPlant;
      expect(post.requestBody).toEqual({
        required: true,
        content: {
          'application/json': {
            schema: { $ref: '#/components/schemas/NewPlant' },
            example: { id: 10, name: 'Monstera deliciosa', tag: 'tropical' },
          },
        },
      });
      expect((post.parameters as Doc[]).map((p): unknown[] => [p.in, p.name, p.required])).toEqual([
        ['header', 'webhook-id', true],
        ['header', 'webhook-timestamp', true],
        ['header', 'webhook-signature', true],
      ]);
      expect(Object.keys(post.responses)).toEqual(['200', '410']);
      // The webhook itself is not a route of the service.
      expect(served.paths['/newPlant']).toBeUndefined();
    });

    it('should show an example delivery of every webhook: its body as sent, valid, and signature headers that verify it', () => {
      const examples: Record<string, unknown> = {};
      for (const [name, { post }] of Object.entries(served.webhooks as Doc)) {
        const { example } = post.requestBody.content['application/json'];
        const valid = ajv.compile({
          $ref: `openapi#/webhooks/${name}/post/requestBody/content/application~1json/schema`,
        });
        expect({ name, valid: valid(example), errors: valid.errors ?? null }).toEqual({
          name,
          valid: true,
          errors: null,
        });
        const parameters = post.parameters as Doc[];
        const headers = Object.fromEntries(parameters.map((header) => [header.name, header.schema.example]));
        for (const header of parameters) expect(headers[header.name]).toMatch(new RegExp(header.schema.pattern));
        // Signed with the secret its description names, at its webhook-timestamp, as the service signs a send.
        const signature = parameters.find((header) => header.name === 'webhook-signature')!;
        const secret = /`(whsec_[^`]+)`/.exec(signature.description)![1];
        jest.spyOn(Date, 'now').mockReturnValue(Number(headers['webhook-timestamp']) * 1000);
        try {
          expect(new Webhook(secret).verify(JSON.stringify(example), headers)).toEqual(example);
        } finally {
          jest.restoreAllMocks();
        }
        examples[name] = example;
      }
      // Bare plant.created (the sample's NewPlant); every other type in the envelope, its type inside.
      const plant = { id: 10, name: 'Monstera deliciosa', tag: 'tropical' };
      const { newPlant, plantDeleted, webhookTest, ...generated } = examples;
      // A generated resource's events (when it publishes them): each in the envelope, its own type inside.
      for (const example of Object.values(generated)) {
        expect(example).toEqual({
          type: expect.stringMatching(/^[a-z0-9-]+\.(created|deleted)$/),
          timestamp: '2026-11-29T07:11:32.123Z',
          data: expect.objectContaining({ id: 10 }),
        });
      }
      expect({ newPlant, plantDeleted, webhookTest }).toEqual({
        newPlant: plant,
        plantDeleted: { type: 'plant.deleted', timestamp: '2026-11-29T07:11:32.123Z', data: plant },
        webhookTest: {
          type: 'webhook.test',
          timestamp: '2026-11-29T07:11:32.123Z',
          data: { endpointId: 'ep_019ab3c4d5e600002f4e1a9b7c3d' },
        },
      });
    });

    it('should declare the health bodies: HealthCheck on 200, Error on 503', () => {
      for (const path of ['/health/live', '/health/ready']) {
        expect(served.paths[path].get.responses['200'].content['application/json'].schema).toEqual({
          $ref: '#/components/schemas/HealthCheck',
        });
      }
      expect(served.paths['/health/ready'].get.responses['503'].content['application/json'].schema).toEqual({
        $ref: '#/components/schemas/Error',
      });
    });
  });

  describe('every operation, as the app declares its routes', () => {
    let routes: AppRoute[];
    let operations: { at: string; route: AppRoute; operation: Doc }[];
    const ERROR_REF = { $ref: '#/components/schemas/Error' };

    beforeAll(() => {
      routes = appRoutes(server.app).filter((route) => !route.undocumented);
      operations = routes.map((route) => ({
        at: route.at,
        route,
        operation: served.paths[route.path]?.[route.method],
      }));
    });

    it('should document every route of the app, and nothing else', () => {
      const documented = Object.entries(served.paths).flatMap(([path, methods]) =>
        Object.keys(methods as Doc).map((method) => `${method} ${path}`),
      );
      expect(routes.length).toBeGreaterThan(0);
      expect(documented.sort()).toEqual(routes.map(({ at }) => at).sort());
    });

    it('should give each a unique operationId, a summary and a tag', () => {
      const ids = operations.map(({ operation }) => operation.operationId as string);
      expect(new Set(ids).size).toBe(ids.length);
      for (const { at, operation } of operations) {
        expect({ at, summary: typeof operation.summary, tags: operation.tags?.length }).toEqual({
          at,
          summary: 'string',
          tags: 1,
        });
      }
    });

    it('should answer every failure with an Error body whose example carries its status', () => {
      for (const { at, operation } of operations) {
        for (const [status, response] of Object.entries(operation.responses as Record<string, Doc>)) {
          if (Number(status) < 400) continue;
          const json = response.content?.['application/json'];
          expect({ at, status, schema: json?.schema, error: json?.example?.error }).toEqual({
            at,
            status,
            schema: ERROR_REF,
            error: Number(status),
          });
        }
      }
    });

    it('should mark public routes as needing no credential, and declare the 401 with its challenge on every other', () => {
      for (const { at, route, operation } of operations) {
        const unauthorized = operation.responses['401'];
        if (route.public) {
          expect({ at, security: operation.security, unauthorized }).toEqual({
            at,
            security: [],
            unauthorized: undefined,
          });
        } else {
          expect({ at, security: operation.security ?? served.security }).toEqual({ at, security: [{ bearer: [] }] });
          expect({ at, challenge: unauthorized?.headers?.['WWW-Authenticate']?.schema?.type }).toEqual({
            at,
            challenge: 'string',
          });
        }
      }
    });

    it('should declare the 429 with Retry-After where the rate limit or the failed-authentication limit applies', () => {
      for (const { at, route, operation } of operations) {
        const limited = !route.public || !route.unthrottled;
        const retryAfter = operation.responses['429']?.headers?.['Retry-After']?.schema?.type;
        expect({ at, retryAfter }).toEqual({ at, retryAfter: limited ? 'integer' : undefined });
      }
    });

    it('should declare the 403 with the insufficient_scope challenge exactly on admin routes', () => {
      for (const { at, route, operation } of operations) {
        const challenge = operation.responses['403']?.headers?.['WWW-Authenticate']?.schema?.example as string;
        expect({ at, insufficientScope: challenge?.includes('insufficient_scope') ?? false }).toEqual({
          at,
          insufficientScope: route.adminOnly,
        });
      }
    });

    it('should declare what Node answers before any route (408, 431) and the 500 on every protected operation', () => {
      for (const { at, operation } of operations.filter(({ route }) => !route.public)) {
        expect({ at, statuses: ['408', '431', '500'].filter((status) => operation.responses[status]) }).toEqual({
          at,
          statuses: ['408', '431', '500'],
        });
      }
    });

    it('should declare 400, 413 and 415 wherever a body is read', () => {
      for (const { at, operation } of operations.filter(({ operation }) => operation.requestBody)) {
        expect({ at, statuses: ['400', '413', '415'].filter((status) => operation.responses[status]) }).toEqual({
          at,
          statuses: ['400', '413', '415'],
        });
      }
    });

    it('should declare 400 and 414 for every int64 path parameter, and warn JavaScript clients about 2^53', () => {
      for (const { at, operation } of operations) {
        const int64 = ((operation.parameters ?? []) as Doc[]).filter(({ schema }) => schema?.format === 'int64');
        for (const parameter of int64) {
          expect({ at, name: parameter.name, warns: (parameter.description as string).includes('2^53') }).toEqual({
            at,
            name: parameter.name,
            warns: true,
          });
        }
        if (int64.some(({ in: where }) => where === 'path')) {
          expect({ at, statuses: ['400', '414'].filter((status) => operation.responses[status]) }).toEqual({
            at,
            statuses: ['400', '414'],
          });
        }
      }
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

    it.each<[string, string, string, number, Doc]>([
      [
        'a page',
        'get',
        '/plants?limit=2',
        200,
        { type: 'array', items: { $ref: 'openapi#/components/schemas/NewPlant' } },
      ],
      [
        'an empty page',
        'get',
        '/plants?after=9223372036854775807',
        200,
        { type: 'array', items: { $ref: 'openapi#/components/schemas/NewPlant' } },
      ],
      ['a bad limit', 'get', '/plants?limit=0', 400, { $ref: 'openapi#/components/schemas/Error' }],
      ['a plant', 'get', '/plants/11', 200, { $ref: 'openapi#/components/schemas/NewPlant' }],
      ['a plant without tag', 'get', '/plants/12', 200, { $ref: 'openapi#/components/schemas/NewPlant' }],
      ['an unknown plant', 'get', '/plants/404', 404, { $ref: 'openapi#/components/schemas/Error' }],
      ['a bad path id', 'get', '/plants/1.5', 400, { $ref: 'openapi#/components/schemas/Error' }],
      ['a delete of an unknown plant', 'delete', '/plants/404', 404, { $ref: 'openapi#/components/schemas/Error' }],
      ['liveness', 'get', '/health/live', 200, { $ref: 'openapi#/components/schemas/HealthCheck' }],
      ['readiness', 'get', '/health/ready', 200, { $ref: 'openapi#/components/schemas/HealthCheck' }],
    ])('should validate the body of %s', async (_label, method, path, status, bodySchema) => {
      await request(`${server.url}/plants`, { body: { id: 11, name: 'Monstera', tag: 'tropical' } });
      await request(`${server.url}/plants`, { body: { id: 12, name: 'Fern' } });
      const res = await request(`${server.url}${path}`, { method: method.toUpperCase() });
      expect(res.status).toBe(status);
      const validate = ajv.compile(bodySchema);
      expect({ valid: validate(res.body), errors: validate.errors ?? [] }).toEqual({ valid: true, errors: [] });
      const template = path.split('?')[0].replace(/^\/plants\/[^/]+$/, '/plants/{id}');
      expect(served.paths[template][method].responses[String(status)]).toBeDefined();
    });

    it('should answer a delete with the declared 204 and no body', async () => {
      await request(`${server.url}/plants`, { body: { id: 13, name: 'Short-lived' } });
      const res = await request(`${server.url}/plants/13`, { method: 'DELETE' });
      expect(res.status).toBe(204);
      expect(res.text).toBe('');
      expect(served.paths['/plants/{id}'].delete.responses['204']).toBeDefined();
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

  describe('the headers it declares, with CORS and the rate limit on', () => {
    const ORIGIN = 'https://app.example';
    let limited: TestApp;
    beforeAll(async () => (limited = await createTestApp({ RATE_LIMIT_PER_MINUTE: '5', CORS_ORIGINS: ORIGIN })));
    afterAll(() => limited.destroy());

    /** The headers `served` declares on that answer, by lowercase name, resolving `$ref`s. */
    const declared = (path: string, method: string, status: number): string[] =>
      Object.keys(served.paths[path][method].responses[String(status)].headers ?? {}).map((name) => name.toLowerCase());

    it.each<[string, string, string, number, Doc | undefined, string]>([
      ['a create', 'post', '/plants', 200, { id: 1, name: 'Fern' }, '/plants'],
      ['a page with a next one', 'get', '/plants?limit=1', 200, undefined, '/plants'],
      ['a plant that is not there', 'get', '/plants/404', 404, undefined, '/plants/{id}'],
      ['an invalid query', 'get', '/plants?limit=0', 400, undefined, '/plants'],
      ['the rate limit', 'get', '/plants', 429, undefined, '/plants'],
      ['no credential', 'get', '/plants', 401, undefined, '/plants'],
      ['a probe', 'get', '/health/live', 200, undefined, '/health/live'],
    ])('should send every header declared on %s', async (_label, method, url, status, body, path) => {
      if (url === '/plants?limit=1') await request(`${limited.url}/plants`, { body: { id: 2, name: 'Ivy' } });
      const res = await request(`${limited.url}${url}`, {
        method: method.toUpperCase(),
        body,
        auth: status === 401 || path.startsWith('/health') ? false : undefined,
        headers: { origin: ORIGIN },
      });
      expect(res.status).toBe(status);
      const names = declared(path, method, status);
      expect(names).toContain('access-control-allow-origin');
      expect({ url, missing: names.filter((name) => res.headers.get(name) === null) }).toEqual({ url, missing: [] });
      const rateLimited = names.includes('x-ratelimit-limit');
      expect({ url, rateLimited }).toEqual({ url, rateLimited: status !== 401 && !path.startsWith('/health') });
    });
  });
});
