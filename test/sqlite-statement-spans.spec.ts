import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { context, ROOT_CONTEXT, Span, SpanKind, SpanStatusCode, trace, TraceFlags } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { AlwaysOnSampler, InMemorySpanExporter, SimpleSpanProcessor, TracerProvider } from '@opentelemetry/sdk-trace';
// Used as types only (so erased when compiled): the modules are required below, once tracing is asked for.
import * as SqliteStore from '../src/database/sqlite-database';
import * as PlantsMigrations from '../src/plants/persistence/plants.migrations';

type SqliteModule = typeof SqliteStore;
type MigrationsModule = typeof PlantsMigrations;

// The statement spans of the SQLite store, seen through an in-memory exporter. Tracing is decided once,
// when `trace-context.ts` is loaded (from the OTEL_* variables, as `src/tracing/tracing.ts` decides to start the
// SDK), so this file asks for it before it loads the store, and registers the SDK pieces `src/tracing/tracing.ts`
// would: the AsyncLocalStorage context manager and a global tracer provider. Its sampler is AlwaysOn,
// not parent-based: a span the store made under an unsampled parent would then be recorded and seen.
describe('SqliteDatabase statement spans (tracing on)', () => {
  const exporter = new InMemorySpanExporter();
  const provider = new TracerProvider({
    sampler: new AlwaysOnSampler(),
    spanProcessors: [new SimpleSpanProcessor({ exporter })],
  });
  const requests = provider.getTracer('test');
  const tracesExporter = process.env.OTEL_TRACES_EXPORTER;
  let store: SqliteModule;
  let dir: string;
  let database: InstanceType<SqliteModule['SqliteDatabase']>;

  beforeAll(() => {
    process.env.OTEL_TRACES_EXPORTER = 'otlp';
    /* eslint-disable @typescript-eslint/no-require-imports -- loaded once tracing is asked for */
    store = require('../src/database/sqlite-database') as SqliteModule;
    /* eslint-enable @typescript-eslint/no-require-imports */
    context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
    trace.setGlobalTracerProvider(provider);
  });
  afterAll(async () => {
    trace.disable();
    context.disable();
    await provider.shutdown();
    if (tracesExporter === undefined) delete process.env.OTEL_TRACES_EXPORTER;
    else process.env.OTEL_TRACES_EXPORTER = tracesExporter;
  });

  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), 'plant-store-sqlite-spans-'));
    // eslint-disable-next-line @typescript-eslint/no-require-imports -- beside the store's own load
    const { PLANTS_MIGRATIONS } = require('../src/plants/persistence/plants.migrations') as MigrationsModule;
    database = new store.SqliteDatabase(join(dir, 'plants.db'), PLANTS_MIGRATIONS);
    await database.onModuleInit();
    exporter.reset();
  });
  afterEach(() => {
    database.onApplicationShutdown();
    rmSync(dir, { recursive: true, force: true });
  });

  const plants = () => database.kysely;
  /** `work` with `span` active, as a sampled request's handler runs. */
  const within = <T>(span: Span, work: () => Promise<T>) => context.with(trace.setSpan(ROOT_CONTEXT, span), work);
  /** The spans the store made (the test's own request spans left out). */
  const statementSpans = () => exporter.getFinishedSpans().filter((span) => span.name.startsWith('sqlite '));

  it('should make one CLIENT span per statement, child of the sampled span active, named for its action, with the store and the operation', async () => {
    const request = requests.startSpan('POST /plants');
    await within(request, async () => {
      await database.execute(
        'store a plant',
        plants().insertInto('plants').values({ id: 1n, name: 'Aloe', tag: null }).compile(),
      );
      const read = plants().selectFrom('plants').select('name').where('id', '=', 1n).compile();
      await expect(database.execute('read a plant', read)).resolves.toEqual({
        rows: [{ name: 'Aloe' }],
        affectedRows: 0,
      });
      await database.execute('tag a plant', plants().updateTable('plants').set({ tag: 'x' }).compile());
      await database.execute('delete a plant', plants().deleteFrom('plants').where('id', '=', 1n).compile());
    });
    request.end();

    const { traceId, spanId } = request.spanContext();
    expect(
      statementSpans().map((span) => ({
        name: span.name,
        kind: span.kind,
        attributes: span.attributes,
        traceId: span.spanContext().traceId,
        parent: span.parentSpanContext?.spanId,
        status: span.status.code,
        scope: span.instrumentationScope.name,
      })),
    ).toEqual(
      [
        ['sqlite store a plant', 'INSERT'],
        ['sqlite read a plant', 'SELECT'],
        ['sqlite tag a plant', 'UPDATE'],
        ['sqlite delete a plant', 'DELETE'],
      ].map(([name, operation]) => ({
        name,
        kind: SpanKind.CLIENT,
        attributes: { 'db.system': 'sqlite', 'db.operation': operation },
        traceId,
        parent: spanId,
        status: SpanStatusCode.UNSET,
        scope: 'plant-store',
      })),
    );
  });

  it("should keep the request's span as the parent of a statement that waited for a transaction's turn", async () => {
    let finish!: () => void;
    const held = database.transaction('hold the turn', () => new Promise<void>((resolve) => (finish = resolve)));
    const request = requests.startSpan('GET /plants/{id}');
    const read = within(request, () =>
      database.execute('read a plant', plants().selectFrom('plants').select('name').compile()),
    );
    await new Promise((resolve) => setImmediate(resolve));
    expect(statementSpans()).toEqual([]); // still waiting for the turn
    finish();
    await held;
    await expect(read).resolves.toEqual({ rows: [], affectedRows: 0 });
    request.end();

    expect(statementSpans().map((span) => [span.name, span.parentSpanContext?.spanId])).toEqual([
      ['sqlite read a plant', request.spanContext().spanId],
    ]);
  });

  it('should end the span of a failing statement as an error, with the exception the caller gets', async () => {
    database.connection.exec('DROP TABLE plants');
    const request = requests.startSpan('GET /plants');
    const read = within(request, () =>
      database.execute('read a plant', plants().selectFrom('plants').select('name').compile()),
    );
    await expect(read).rejects.toThrow('SQLite failed to read a plant');
    request.end();

    const [span, ...others] = statementSpans();
    expect(others).toEqual([]);
    expect(span.name).toBe('sqlite read a plant');
    expect(span.parentSpanContext?.spanId).toBe(request.spanContext().spanId);
    expect(span.status).toEqual({ code: SpanStatusCode.ERROR });
    expect(span.events.map((event) => [event.name, event.attributes?.['exception.message']])).toEqual([
      ['exception', 'SQLite failed to read a plant'],
    ]);
  });

  it('should make no span when the active span is not sampled, nor when none is active, and still run the statement', async () => {
    const unsampled = trace.wrapSpanContext({
      traceId: '0af7651916cd43dd8448eb211c80319c',
      spanId: 'b7ad6b7169203331',
      traceFlags: TraceFlags.NONE,
    });
    const insert = plants().insertInto('plants').values({ id: 1n, name: 'Aloe', tag: null }).compile();
    await expect(within(unsampled, () => database.execute('store a plant', insert))).resolves.toEqual({
      rows: [],
      affectedRows: 1,
    });
    const read = plants().selectFrom('plants').select('name').compile();
    await expect(database.execute('read a plant', read)).resolves.toEqual({
      rows: [{ name: 'Aloe' }],
      affectedRows: 0,
    });

    expect(exporter.getFinishedSpans()).toEqual([]);
  });
});
