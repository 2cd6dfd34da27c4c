// The main thread's tracing configuration from the standard variables (docs/adr/0026, 0027): the
// sampler and the propagators, built from the SDK's parts (@opentelemetry/sdk-trace-base,
// @opentelemetry/core) rather than @opentelemetry/sdk-node, which the export worker runs: sdk-node loads
// every exporter it knows (gRPC, protobuf, Zipkin, Prometheus, logs and metrics), and merely loading it
// cost the request path CPU (ADR 26).
import type { Sampler, TextMapPropagator } from '@opentelemetry/api';

/**
 * The sampler OTEL_TRACES_SAMPLER and OTEL_TRACES_SAMPLER_ARG name, read as the SDK reads them (its own
 * reader is internal to @opentelemetry/sdk-trace-base): the SDK's sampler classes, `parentbased_always_on`
 * by default and for a name it does not know, a ratio of 1 when the argument is missing or outside 0–1.
 */
export async function samplerFrom(env: NodeJS.ProcessEnv, warn: (message: string) => void): Promise<Sampler> {
  const { AlwaysOffSampler, AlwaysOnSampler, ParentBasedSampler, TraceIdRatioBasedSampler } = await import('@opentelemetry/sdk-trace-base');
  const name = env.OTEL_TRACES_SAMPLER?.trim() || 'parentbased_always_on';
  const ratio = () => {
    const raw = env.OTEL_TRACES_SAMPLER_ARG?.trim();
    const value = raw ? Number(raw) : Number.NaN;
    if (Number.isFinite(value) && value >= 0 && value <= 1) return value;
    warn(`OTEL_TRACES_SAMPLER_ARG is ${raw ? `"${raw}", not a ratio from 0 to 1` : 'not set'}: sampling with 1`);
    return 1;
  };
  switch (name) {
    case 'always_on':
      return new AlwaysOnSampler();
    case 'always_off':
      return new AlwaysOffSampler();
    case 'traceidratio':
      return new TraceIdRatioBasedSampler(ratio());
    case 'parentbased_traceidratio':
      return new ParentBasedSampler({ root: new TraceIdRatioBasedSampler(ratio()) });
    case 'parentbased_always_off':
      return new ParentBasedSampler({ root: new AlwaysOffSampler() });
    case 'parentbased_always_on':
      return new ParentBasedSampler({ root: new AlwaysOnSampler() });
    default:
      warn(`OTEL_TRACES_SAMPLER names "${name}", which this gateway does not have: sampling with parentbased_always_on`);
      return new ParentBasedSampler({ root: new AlwaysOnSampler() });
  }
}

/**
 * The propagators OTEL_PROPAGATORS names, as sdk-node reads it: W3C trace context and baggage by
 * default; `b3`, `b3multi` and `jaeger` loaded only when named; `none` for none (null).
 */
export async function propagatorFrom(env: NodeJS.ProcessEnv, warn: (message: string) => void): Promise<TextMapPropagator | null> {
  const core = await import('@opentelemetry/core');
  const chosen = propagatorNames(env);
  if (chosen.includes('none')) return null;
  const propagators: TextMapPropagator[] = [];
  for (const name of chosen) {
    if (name === 'tracecontext') propagators.push(new core.W3CTraceContextPropagator());
    else if (name === 'baggage') propagators.push(new core.W3CBaggagePropagator());
    else if (name === 'b3' || name === 'b3multi') {
      const { B3Propagator, B3InjectEncoding } = await import('@opentelemetry/propagator-b3');
      propagators.push(new B3Propagator(name === 'b3multi' ? { injectEncoding: B3InjectEncoding.MULTI_HEADER } : {}));
    } else if (name === 'jaeger') {
      const { JaegerPropagator } = await import('@opentelemetry/propagator-jaeger');
      propagators.push(new JaegerPropagator());
    } else warn(`OTEL_PROPAGATORS names "${name}", which this gateway does not have; it is left out`);
  }
  return new core.CompositePropagator({ propagators });
}

/** The propagators OTEL_PROPAGATORS names, each once: W3C trace context and baggage when it names none. */
export function propagatorNames(env: NodeJS.ProcessEnv): string[] {
  const names = [...new Set((env.OTEL_PROPAGATORS ?? '').split(',').map((s) => s.trim()).filter(Boolean))];
  return names.length > 0 ? names : ['tracecontext', 'baggage'];
}

/**
 * Whether what the propagators write for a span alone (no baggage in its context) is exactly a W3C
 * `traceparent` and `tracestate`: W3C trace context, with or without baggage. Then an unsampled
 * request's upstream headers can be written directly, the cheapest way (request-telemetry.ts).
 */
export function propagatesW3CTraceContextOnly(env: NodeJS.ProcessEnv): boolean {
  const names = propagatorNames(env);
  return names.includes('tracecontext') && names.every((name) => name === 'tracecontext' || name === 'baggage');
}
