import { createServer, Server } from 'node:http';

/** A span as the OTLP/HTTP JSON exporter sends it, flattened. */
export interface ExportedSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  attributes: Record<string, unknown>;
  links: { traceId: string; spanId: string }[];
  serviceName?: string;
}

interface OtlpValue {
  stringValue?: string;
  intValue?: string | number;
  boolValue?: boolean;
  doubleValue?: number;
}

/** A collector stand-in on 127.0.0.1: takes OTLP/HTTP JSON (`OTEL_EXPORTER_OTLP_PROTOCOL=http/json`) at /v1/traces. */
export class OtlpReceiver {
  readonly spans: ExportedSpan[] = [];
  private server?: Server;
  port = 0;

  get endpoint(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  async start(): Promise<void> {
    const server = createServer((request, response) => {
      const chunks: Buffer[] = [];
      request.on('data', (chunk: Buffer) => chunks.push(chunk));
      request.on('end', () => {
        if (request.url === '/v1/traces') this.take(Buffer.concat(chunks).toString('utf8'));
        response.writeHead(200, { 'content-type': 'application/json' }).end('{}');
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    this.port = (server.address() as { port: number }).port;
    this.server = server;
  }

  async stop(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }

  private take(body: string): void {
    const value = (v: OtlpValue) => v.stringValue ?? v.intValue ?? v.boolValue ?? v.doubleValue;
    const parsed = JSON.parse(body) as {
      resourceSpans: {
        resource?: { attributes?: { key: string; value: OtlpValue }[] };
        scopeSpans: {
          spans: {
            traceId: string;
            spanId: string;
            parentSpanId?: string;
            name: string;
            kind: number;
            attributes?: { key: string; value: OtlpValue }[];
            links?: { traceId: string; spanId: string }[];
          }[];
        }[];
      }[];
    };
    for (const resource of parsed.resourceSpans) {
      const serviceName = resource.resource?.attributes?.find((a) => a.key === 'service.name')?.value.stringValue;
      for (const scope of resource.scopeSpans) {
        for (const span of scope.spans) {
          this.spans.push({
            traceId: span.traceId,
            spanId: span.spanId,
            ...(span.parentSpanId ? { parentSpanId: span.parentSpanId } : {}),
            name: span.name,
            kind: span.kind,
            attributes: Object.fromEntries((span.attributes ?? []).map((a) => [a.key, value(a.value)])),
            links: span.links ?? [],
            serviceName,
          });
        }
      }
    }
  }
}
