// A client of the admin API written only against the types openapi-typescript generates from
// openapi.json (./plant-store.d.ts is generated next to a copy of this file by the test). If the
// document stops describing a route, a body or an answer the way the service serves it, this file no
// longer type-checks, or its run fails.
import createClient from 'openapi-fetch';
import type { paths } from './plant-store';

const client = createClient<paths>({
  baseUrl: process.env.BASE_URL,
  headers: { Authorization: `Bearer ${process.env.ADMIN_TOKEN}` },
});

function ok<T>(answer: { data?: T; error?: unknown; response: Response }, status: number): T {
  if (answer.response.status !== status || answer.data === undefined) {
    throw new Error(`expected ${status}, got ${answer.response.status}: ${JSON.stringify(answer.error)}`);
  }
  return answer.data;
}

async function main(): Promise<void> {
  const created = ok(
    await client.POST('/webhooks/endpoints', { body: { url: process.env.RECEIVER_URL!, description: 'typed' } }),
    201,
  );
  const id: string = created.id;
  const firstSecret: string = created.secret;
  const listed = ok(await client.GET('/webhooks/endpoints', { params: { query: { limit: 10 } } }), 200);
  const read = ok(await client.GET('/webhooks/endpoints/{id}', { params: { path: { id } } }), 200);
  const secret = ok(await client.GET('/webhooks/endpoints/{id}/secret', { params: { path: { id } } }), 200);
  const rotated = ok(
    await client.POST('/webhooks/endpoints/{id}/secret/rotate', { params: { path: { id } }, body: {} }),
    200,
  );
  const patched = ok(
    await client.PATCH('/webhooks/endpoints/{id}', { params: { path: { id } }, body: { description: 'renamed' } }),
    200,
  );
  const deliveries = ok(
    await client.GET('/webhooks/endpoints/{id}/deliveries', {
      params: { path: { id }, query: { status: 'failed', limit: 5 } },
    }),
    200,
  );
  const recovered = ok(
    await client.POST('/webhooks/endpoints/{id}/recover', {
      params: { path: { id } },
      body: { since: new Date(0).toISOString() },
    }),
    202,
  );
  const deleted = await client.DELETE('/webhooks/endpoints/{id}', { params: { path: { id } } });
  process.stdout.write(
    JSON.stringify({
      id,
      secretsDiffer: firstSecret !== rotated.secret,
      secretMatches: secret.secret === firstSecret,
      listed: listed.map((endpoint) => endpoint.id),
      read: { url: read.url, source: read.source, disabled: read.disabled },
      patched: patched.description,
      deliveries: deliveries.length,
      queued: recovered.queued,
      deleted: deleted.response.status,
    }),
  );
}

main().catch((error: unknown) => {
  process.stderr.write(`${String(error)}\n`);
  process.exitCode = 1;
});
