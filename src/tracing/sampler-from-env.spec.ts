import { Context, diag, DiagLogLevel, ROOT_CONTEXT, SpanKind, trace, TraceFlags } from '@opentelemetry/api';
import { SamplingDecision } from '@opentelemetry/sdk-trace';
import { samplerFromEnv } from './sampler-from-env';

const { NOT_RECORD, RECORD_AND_SAMPLED } = SamplingDecision;
const TRACE_ID = '0af7651916cd43dd8448eb211c80319c';

function parent(flags: TraceFlags): Context {
  return trace.setSpanContext(ROOT_CONTEXT, {
    traceId: TRACE_ID,
    spanId: 'b7ad6b7169203331',
    traceFlags: flags,
    isRemote: true,
  });
}

/** What the sampler decides for a root span, under a sampled caller, and under a caller that did not sample. */
function decisions(env: NodeJS.ProcessEnv): SamplingDecision[] {
  const sampler = samplerFromEnv(env);
  return [ROOT_CONTEXT, parent(TraceFlags.SAMPLED), parent(TraceFlags.NONE)].map(
    (context) => sampler.shouldSample(context, TRACE_ID, 'GET', SpanKind.SERVER, {}, []).decision,
  );
}

describe('samplerFromEnv (OTEL_TRACES_SAMPLER and OTEL_TRACES_SAMPLER_ARG)', () => {
  let errors: string[];
  beforeEach(() => {
    errors = [];
    const ignore = () => undefined;
    diag.setLogger(
      { error: (message) => errors.push(message), warn: ignore, info: ignore, debug: ignore, verbose: ignore },
      DiagLogLevel.ERROR,
    );
  });
  afterEach(() => diag.disable());

  it.each([
    [{}, [RECORD_AND_SAMPLED, RECORD_AND_SAMPLED, NOT_RECORD]],
    [{ OTEL_TRACES_SAMPLER: 'parentbased_always_on' }, [RECORD_AND_SAMPLED, RECORD_AND_SAMPLED, NOT_RECORD]],
    [{ OTEL_TRACES_SAMPLER: 'parentbased_always_off' }, [NOT_RECORD, RECORD_AND_SAMPLED, NOT_RECORD]],
    [{ OTEL_TRACES_SAMPLER: 'always_on' }, [RECORD_AND_SAMPLED, RECORD_AND_SAMPLED, RECORD_AND_SAMPLED]],
    [{ OTEL_TRACES_SAMPLER: ' always_off ' }, [NOT_RECORD, NOT_RECORD, NOT_RECORD]],
    [{ OTEL_TRACES_SAMPLER: 'traceidratio', OTEL_TRACES_SAMPLER_ARG: '0' }, [NOT_RECORD, NOT_RECORD, NOT_RECORD]],
    [
      { OTEL_TRACES_SAMPLER: 'traceidratio', OTEL_TRACES_SAMPLER_ARG: '1' },
      [RECORD_AND_SAMPLED, RECORD_AND_SAMPLED, RECORD_AND_SAMPLED],
    ],
    [
      { OTEL_TRACES_SAMPLER: 'parentbased_traceidratio', OTEL_TRACES_SAMPLER_ARG: '0' },
      [NOT_RECORD, RECORD_AND_SAMPLED, NOT_RECORD],
    ],
  ])('should decide for %j as the standard names say (root, sampled caller, unsampled caller)', (env, expected) => {
    expect(decisions(env)).toEqual(expected);
    expect(errors).toEqual([]);
  });

  it('should fall back to parentbased_always_on for an unknown name, and say so', () => {
    expect(decisions({ OTEL_TRACES_SAMPLER: 'rules' })).toEqual([RECORD_AND_SAMPLED, RECORD_AND_SAMPLED, NOT_RECORD]);
    expect(errors).toEqual(['OTEL_TRACES_SAMPLER value "rules" invalid, defaulting to "parentbased_always_on".']);
  });

  it.each(['', 'half', '1.5', '-0.1'])('should take a ratio of 1 for OTEL_TRACES_SAMPLER_ARG=%j, and say so', (arg) => {
    expect(decisions({ OTEL_TRACES_SAMPLER: 'parentbased_traceidratio', OTEL_TRACES_SAMPLER_ARG: arg })).toEqual([
      RECORD_AND_SAMPLED,
      RECORD_AND_SAMPLED,
      NOT_RECORD,
    ]);
    expect(errors).toHaveLength(1);
    expect(errors[0]).toMatch(/^OTEL_TRACES_SAMPLER_ARG.*defaulting to 1\.$/);
  });
});
