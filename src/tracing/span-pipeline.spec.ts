import { ExportResult, ExportResultCode } from '@opentelemetry/core';
import { ReadableSpan, SpanExporter, TracerProvider } from '@opentelemetry/sdk-trace';
import { spanProcessorFromEnv } from './span-pipeline';
import { SpanTally } from './trace-context';

/** An exporter that holds every export until `release`, then answers `code` (with an error when failed, as OTLP's do). */
class HeldExporter implements SpanExporter {
  readonly batches: number[] = [];
  private held: (() => void)[] = [];
  constructor(private readonly code: ExportResultCode) {}
  export(spans: ReadableSpan[], done: (result: ExportResult) => void): void {
    this.batches.push(spans.length);
    const error = this.code === ExportResultCode.FAILED ? new Error('Service Unavailable') : undefined;
    this.held.push(() => done({ code: this.code, error }));
  }
  release(): void {
    for (const answer of this.held.splice(0)) answer();
  }
  shutdown(): Promise<void> {
    return Promise.resolve();
  }
}

/** Ends `count` spans through a provider with `processor`; the exporter answers after each export starts. */
async function endSpans(exporter: HeldExporter, env: NodeJS.ProcessEnv, count: number): Promise<SpanTally> {
  const tally: SpanTally = { exported: 0, dropped: 0, failed: 0 };
  const provider = new TracerProvider({ spanProcessors: [spanProcessorFromEnv(exporter, env, tally)] });
  const tracer = provider.getTracer('test');
  for (let i = 0; i < count; i++) tracer.startSpan(`span ${i}`).end();
  const shutdown = provider.shutdown();
  // Answer each export as it comes, until the shutdown's flush is done.
  const answering = setInterval(() => exporter.release(), 1);
  // A failed last export rejects the shutdown; it is counted all the same.
  await shutdown.catch(() => undefined);
  clearInterval(answering);
  return tally;
}

describe('spanProcessorFromEnv', () => {
  it('should export in batches of 2048 and hold 16384 spans by default, and count them', async () => {
    const exporter = new HeldExporter(ExportResultCode.SUCCESS);
    const tally = await endSpans(exporter, {}, 5000);
    expect(exporter.batches).toEqual([2048, 2048, 904]);
    expect(tally).toEqual({ exported: 5000, dropped: 0, failed: 0 });
  });

  it('should take the OTEL_BSP_* variables over its own sizes, and count the spans a full queue drops', async () => {
    const exporter = new HeldExporter(ExportResultCode.SUCCESS);
    const tally = await endSpans(
      exporter,
      { OTEL_BSP_MAX_QUEUE_SIZE: '100', OTEL_BSP_MAX_EXPORT_BATCH_SIZE: '50' },
      250,
    );
    // The first batch of 50 leaves at once and is held; 100 wait in the queue; the other 100 are dropped.
    expect(tally).toEqual({ exported: 150, dropped: 100, failed: 0 });
    expect(exporter.batches).toEqual([50, 50, 50]);
  });

  it('should give up an export after OTEL_BSP_EXPORT_TIMEOUT ms', async () => {
    const exporter = new HeldExporter(ExportResultCode.SUCCESS);
    const provider = new TracerProvider({
      spanProcessors: [
        spanProcessorFromEnv(exporter, { OTEL_BSP_EXPORT_TIMEOUT: '20' }, { exported: 0, dropped: 0, failed: 0 }),
      ],
    });
    provider.getTracer('test').startSpan('never answered').end();
    // The exporter never answers: the shutdown's flush gives up (the SDK's default would wait 30 s).
    await expect(provider.shutdown()).rejects.toThrow('Timeout');
    expect(exporter.batches).toEqual([1]);
  });

  it('should count the spans of an export the collector did not accept', async () => {
    const exporter = new HeldExporter(ExportResultCode.FAILED);
    const tally = await endSpans(exporter, {}, 10);
    expect(tally).toEqual({ exported: 0, dropped: 0, failed: 10 });
  });
});
