/**
 * OpenTelemetry tracing, off by default and free when off: the SDK and its instrumentations are
 * loaded only when the standard variables ask for it (`OTEL_EXPORTER_OTLP_ENDPOINT` or
 * `OTEL_TRACES_EXPORTER`, other than `none`). The SDK reads every other `OTEL_*` name itself
 * (`OTEL_SERVICE_NAME`, `OTEL_TRACES_SAMPLER`, `OTEL_RESOURCE_ATTRIBUTES`, the exporter's protocol,
 * headers and timeout).
 *
 * `main.ts` imports this first, before Nest, Fastify, pg or undici are loaded, as the
 * instrumentations require (they patch modules as they are first required).
 */
// Types only: erased at build, so nothing of the SDK is loaded unless tracing is on.
import * as FastifyOtel from '@fastify/otel';
import * as Http from '@opentelemetry/instrumentation-http';
import * as IORedis from '@opentelemetry/instrumentation-ioredis';
import * as Nest from '@opentelemetry/instrumentation-nestjs-core';
import * as Pg from '@opentelemetry/instrumentation-pg';
import * as Undici from '@opentelemetry/instrumentation-undici';
import * as SdkNode from '@opentelemetry/sdk-node';

import { tracingRequested } from './platform/trace-context';

let sdk: SdkNode.NodeSDK | undefined;

function startTracing(): void {
  /* eslint-disable @typescript-eslint/no-require-imports -- loaded only when tracing is on */
  const { NodeSDK } = require('@opentelemetry/sdk-node') as typeof SdkNode;
  const { HttpInstrumentation } = require('@opentelemetry/instrumentation-http') as typeof Http;
  const { FastifyOtelInstrumentation } = require('@fastify/otel') as typeof FastifyOtel;
  const { PgInstrumentation } = require('@opentelemetry/instrumentation-pg') as typeof Pg;
  const { IORedisInstrumentation } = require('@opentelemetry/instrumentation-ioredis') as typeof IORedis;
  const { NestInstrumentation } = require('@opentelemetry/instrumentation-nestjs-core') as typeof Nest;
  const { UndiciInstrumentation } = require('@opentelemetry/instrumentation-undici') as typeof Undici;
  /* eslint-enable @typescript-eslint/no-require-imports */
  sdk = new NodeSDK({
    instrumentations: [
      // The server span of each request; health probes and scrapes are not traced.
      new HttpInstrumentation({
        ignoreIncomingRequestHook: (request) => /^\/(health|metrics)(\/|$|\?)/.test(request.url ?? ''),
      }),
      // Fastify's hooks and the route (the maintained successor of instrumentation-fastify).
      new FastifyOtelInstrumentation({ registerOnInitialization: true }),
      new NestInstrumentation(),
      new PgInstrumentation({ requireParentSpan: true }),
      new IORedisInstrumentation({ requireParentSpan: true }),
      // The webhook's requests (undici): a client span each, and `traceparent` on the request.
      new UndiciInstrumentation(),
    ],
  });
  sdk.start();
}

/** Flushes the spans still buffered and stops the SDK; called last at shutdown. Nothing when tracing is off. */
export async function shutdownTracing(): Promise<void> {
  await sdk?.shutdown();
}

if (tracingRequested(process.env)) startTracing();
