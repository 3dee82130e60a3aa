import { diag } from '@opentelemetry/api';
import {
  AlwaysOffSampler,
  AlwaysOnSampler,
  ParentBasedSampler,
  Sampler,
  TraceIdRatioBasedSampler,
} from '@opentelemetry/sdk-trace';

/**
 * The sampler `OTEL_TRACES_SAMPLER` and `OTEL_TRACES_SAMPLER_ARG` name, made of the SDK's own samplers.
 * The trace SDK 3 reads no variable (only `sdk-node` does, and not through a public function), so the
 * service reads these two as the 2.x SDK did: the six standard names, `parentbased_always_on` when unset
 * or unknown, and a ratio of 1 when the argument is blank, not a number or outside [0, 1], each of
 * those said once through the SDK's diagnostics.
 */
export function samplerFromEnv(env: NodeJS.ProcessEnv): Sampler {
  const name = env.OTEL_TRACES_SAMPLER?.trim() || 'parentbased_always_on';
  switch (name) {
    case 'always_on':
      return new AlwaysOnSampler();
    case 'always_off':
      return new AlwaysOffSampler();
    case 'parentbased_always_on':
      return new ParentBasedSampler({ root: new AlwaysOnSampler() });
    case 'parentbased_always_off':
      return new ParentBasedSampler({ root: new AlwaysOffSampler() });
    case 'traceidratio':
      return new TraceIdRatioBasedSampler(ratioFromEnv(env));
    case 'parentbased_traceidratio':
      return new ParentBasedSampler({ root: new TraceIdRatioBasedSampler(ratioFromEnv(env)) });
    default:
      diag.error(`OTEL_TRACES_SAMPLER value "${name}" invalid, defaulting to "parentbased_always_on".`);
      return new ParentBasedSampler({ root: new AlwaysOnSampler() });
  }
}

function ratioFromEnv(env: NodeJS.ProcessEnv): number {
  const given = env.OTEL_TRACES_SAMPLER_ARG?.trim() ?? '';
  const ratio = Number(given);
  if (given === '' || Number.isNaN(ratio)) {
    diag.error(`OTEL_TRACES_SAMPLER_ARG is blank or not a number, defaulting to 1.`);
    return 1;
  }
  if (ratio < 0 || ratio > 1) {
    diag.error(`OTEL_TRACES_SAMPLER_ARG=${ratio} was given, but it is out of range ([0..1]), defaulting to 1.`);
    return 1;
  }
  return ratio;
}
