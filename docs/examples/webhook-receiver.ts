import { createServer, IncomingMessage, Server } from 'node:http';
import { isInteger, parse } from 'lossless-json';
import { Webhook } from 'standardwebhooks';

/** A plant as `GET /plants/{id}` answers it, its id a bigint: exact beyond 2^53. */
export interface Plant {
  id: bigint;
  name: string;
  tag?: string;
}

/** Every type but plant.created arrives in the Standard Webhooks envelope. */
interface Envelope {
  type: string;
  timestamp: string;
  data: unknown;
}

/** The receiver's copy of the store, and what it has handled: your database, in production. */
export interface Mirror {
  plants: Map<bigint, Plant>;
  /** The webhook-ids handled; keep each for longer than the retry schedule (about four days by default). */
  handled: Set<string>;
  /** The endpoints whose test send arrived. */
  tested: string[];
}

export interface ReceiverOptions {
  secret: string; // this endpoint's whsec_…
  storeUrl: string; // the Plant Store, e.g. https://plants.example
  token: string; // a token that may read plants
  mirror: Mirror;
}

// Integers become bigint: JSON.parse would round ids beyond 2^53.
const parseExact = (text: string): unknown => parse(text, undefined, (n) => (isInteger(n) ? BigInt(n) : Number(n)));

async function bodyOf(request: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of request) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

/** Verifies each delivery, handles it once, and answers 204 once it is handled (anything else is retried). */
export function createReceiver({ secret, storeUrl, token, mirror }: ReceiverOptions): Server {
  const webhook = new Webhook(secret);

  // No order is promised between events: mirror the store as it is now, never the event's copy.
  const refresh = async (id: bigint) => {
    const answer = await fetch(`${storeUrl}/plants/${id}`, { headers: { authorization: `Bearer ${token}` } });
    if (answer.status === 404) mirror.plants.delete(id);
    else if (answer.ok) mirror.plants.set(id, parseExact(await answer.text()) as Plant);
    else throw new Error(`GET /plants/${id} answered ${answer.status}`);
  };

  const handle = async (body: string) => {
    const event = parseExact(body) as Plant | Envelope;
    if (!('type' in event)) {
      await refresh(event.id); // plant.created: the bare NewPlant
    } else if (event.type === 'plant.deleted') {
      await refresh((event.data as Plant).id);
    } else if (event.type === 'webhook.test') {
      mirror.tested.push((event.data as { endpointId: string }).endpointId); // never a plant to store
    } // Any other type is one this receiver does not use (yet): accept it.
  };

  return createServer((request, response) => {
    void (async () => {
      const body = await bodyOf(request);
      const webhookId = String(request.headers['webhook-id']);
      try {
        // Throws unless a signature matches and webhook-timestamp is within 5 minutes of now.
        webhook.verify(body, request.headers as Record<string, string>, { jsonParse: false });
      } catch {
        return response.writeHead(401).end();
      }
      // At least once: the same event again (a retry, a resend) has the same webhook-id.
      if (!mirror.handled.has(webhookId)) {
        await handle(body);
        mirror.handled.add(webhookId);
      }
      response.writeHead(204).end();
    })().catch(() => response.writeHead(500).end());
  });
}
