// How the bench configures telemetry, shared by run.ts and telemetry-cost.ts: Tollgate itself runs with
// metrics on (every bench gateway gets a metrics port) and tracing on, exporting to the bench's local
// sink; the variants switch parts of that off to price each.
import type { Service } from './procs.ts';

/** Tollgate itself runs with metrics and tracing on; these run beside it to price each. */
export const TELEMETRY_VARIANTS = [
  { name: 'tollgate-tracing-off', label: 'tracing off', env: { OTEL_SDK_DISABLED: 'true' } },
  { name: 'tollgate-telemetry-off', label: 'metrics and tracing off', env: { OTEL_SDK_DISABLED: 'true', TOLLGATE_METRICS_PORT: 'off' } },
] as const;

/** Tracing's fixed part, paid by every request whether its trace is kept or not. */
export const UNSAMPLED_VARIANT = { name: 'tollgate-unsampled', label: 'tracing on, nothing sampled', env: { OTEL_TRACES_SAMPLER: 'always_off' } } as const;

/** Tracing as docs/operations.md recommends it, exporting to the bench's local sink. */
export const tracingEnv = (sink: Service): Record<string, string> => ({
  OTEL_EXPORTER_OTLP_ENDPOINT: sink.origin,
  OTEL_EXPORTER_OTLP_PROTOCOL: 'http/protobuf',
  // BENCH_TRACES_SAMPLER(_ARG) override the sampler, e.g. always_on to profile what a kept trace costs.
  OTEL_TRACES_SAMPLER: process.env.BENCH_TRACES_SAMPLER ?? 'parentbased_traceidratio',
  OTEL_TRACES_SAMPLER_ARG: process.env.BENCH_TRACES_SAMPLER_ARG ?? '0.1',
});
