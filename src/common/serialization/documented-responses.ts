import { FastifyInstance, RouteOptions } from 'fastify';
import { OpenAPIObject } from '@nestjs/swagger';
import { documentedOperation } from '../openapi/documented-operation';

type JsonSchema = Record<string, unknown>;

// The keywords fast-json-stringify writes by; descriptions, examples, formats and bounds only document.
const SERIALIZATION_KEYWORDS = new Set(['type', 'properties', 'required', 'items', 'additionalProperties']);
const COMPOSITIONS = ['anyOf', 'oneOf'];

/**
 * Makes every 2xx JSON response whose documented schema holds an int64 (a `bigint` in the handler's
 * result) be written by Fastify's compiled serializer (fast-json-stringify) from that very schema:
 * it writes a bigint as its exact digits, which `JSON.stringify` cannot do at all, and only the
 * declared properties. So a new resource declares its response DTO once, with `@ApiOkResponse` and
 * its `@ApiProperty({ type: 'integer', format: 'int64' })`, and nothing else. Other responses keep
 * the stock path. A route's own `@RouteSchema` response wins.
 *
 * Registered before the app initialises: Nest adds its routes then, and each passes through here.
 */
export function serializeResponsesAsDocumented(fastify: FastifyInstance, document: OpenAPIObject): void {
  fastify.addHook('onRoute', (route) => {
    const derived = documentedResponses(route, document);
    if (derived === undefined) return;
    const schema = (route.schema ?? {}) as { response?: Record<string, unknown> };
    route.schema = { ...schema, response: { ...derived, ...schema.response } };
  });
}

function documentedResponses(route: RouteOptions, document: OpenAPIObject): Record<string, JsonSchema> | undefined {
  if (Array.isArray(route.method)) return undefined;
  const operation = documentedOperation(document, route.url, route.method) as
    { responses?: Record<string, { content?: Record<string, { schema?: JsonSchema }> }> } | undefined;
  let found: Record<string, JsonSchema> | undefined;
  for (const [status, response] of Object.entries(operation?.responses ?? {})) {
    const schema = response.content?.['application/json']?.schema;
    if (!status.startsWith('2') || schema === undefined || !holdsInt64(schema, document)) continue;
    found = { ...found, [status]: serializationSchema(schema, document) };
  }
  return found;
}

/** The schema with every `$ref` resolved, reduced to what the serializer writes by. */
export function serializationSchema(schema: JsonSchema, document: OpenAPIObject, seen: string[] = []): JsonSchema {
  const resolved = resolve(schema, document, seen);
  if (resolved === undefined) {
    throw new Error(`A response schema refers to itself (${seen.join(' > ')}); give its route a @RouteSchema`);
  }
  const out: JsonSchema = {};
  for (const [key, value] of Object.entries(resolved.schema)) {
    if (key === 'properties') {
      out.properties = Object.fromEntries(
        Object.entries(value as Record<string, JsonSchema>).map(([name, property]) => [
          name,
          serializationSchema(property, document, resolved.seen),
        ]),
      );
    } else if ((key === 'items' || key === 'additionalProperties') && typeof value === 'object') {
      out[key] = serializationSchema(value as JsonSchema, document, resolved.seen);
    } else if (COMPOSITIONS.includes(key)) {
      out[key] = (value as JsonSchema[]).map((option) => serializationSchema(option, document, resolved.seen));
    } else if (SERIALIZATION_KEYWORDS.has(key)) {
      out[key] = value;
    }
  }
  return out;
}

/** Whether an int64 is anywhere in the schema, through its references. */
function holdsInt64(schema: JsonSchema, document: OpenAPIObject, seen: string[] = []): boolean {
  const resolved = resolve(schema, document, seen);
  if (resolved === undefined) return false;
  if (resolved.schema.format === 'int64') return true;
  const nested = [
    ...Object.values((resolved.schema.properties ?? {}) as Record<string, JsonSchema>),
    ...[resolved.schema.items, resolved.schema.additionalProperties].filter((value) => typeof value === 'object'),
    ...COMPOSITIONS.flatMap((key) => (resolved.schema[key] ?? []) as JsonSchema[]),
  ] as JsonSchema[];
  return nested.some((child) => holdsInt64(child, document, resolved.seen));
}

/** Follows `$ref` and a one-element `allOf` (how a described reference is written) to the schema itself. */
function resolve(
  schema: JsonSchema,
  document: OpenAPIObject,
  seen: string[],
): { schema: JsonSchema; seen: string[] } | undefined {
  const allOf = schema.allOf as JsonSchema[] | undefined;
  if (allOf?.length === 1) return resolve(allOf[0], document, seen);
  const ref = schema.$ref as string | undefined;
  if (ref === undefined) return { schema, seen };
  const name = ref.replace('#/components/schemas/', '');
  // A schema that holds itself (a tree) has no finite inlined form.
  if (seen.includes(name)) return undefined;
  const target = document.components?.schemas?.[name] as JsonSchema | undefined;
  if (target === undefined) throw new Error(`The response schema ${name} is not in the document`);
  return resolve(target, document, [...seen, name]);
}
