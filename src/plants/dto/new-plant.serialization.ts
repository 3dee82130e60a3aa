/**
 * The JSON Schema Fastify compiles into the serializer (fast-json-stringify) of responses that carry
 * a plant with its id. It writes a bigint id as its exact digits, which `JSON.stringify` cannot do,
 * and only the listed properties, so nothing else of a plant can leak. Serialization only: the
 * document's `NewPlant` schema comes from `NewPlantDto`.
 */
export const NEW_PLANT_SERIALIZATION = {
  type: 'object',
  required: ['id', 'name'],
  properties: {
    id: { type: 'integer' },
    name: { type: 'string' },
    tag: { type: 'string' },
  },
} as const;
