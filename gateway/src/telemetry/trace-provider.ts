// The main thread's half of tracing (docs/adr/0026): a tracer provider that samples, makes ids and
// records spans, and the propagators that read and write trace context, both from the standard
// variables. Built from the SDK's parts (@opentelemetry/sdk-trace-base, @opentelemetry/core) rather
// than @opentelemetry/sdk-node, which the export worker runs: sdk-node loads every exporter it knows
// (gRPC, protobuf, Zipkin, Prometheus, logs and metrics), and merely loading it cost the request path
// CPU (ADR 26). Nothing here exports.
import type { TextMapPropagator } from '@opentelemetry/api';
import type { SpanProcessor } from '@opentelemetry/sdk-trace-base';

/**
 * A provider whose sampler (OTEL_TRACES_SAMPLER, OTEL_TRACES_SAMPLER_ARG) and span limits
 * (OTEL_SPAN_*, OTEL_ATTRIBUTE_*) come from the environment, as sdk-node's would.
 */
export async function tracerProviderFor(processor: SpanProcessor) {
  const { BasicTracerProvider } = await import('@opentelemetry/sdk-trace-base');
  return new BasicTracerProvider({ spanProcessors: [processor] });
}

/**
 * The propagators OTEL_PROPAGATORS names, as sdk-node reads it: W3C trace context and baggage by
 * default; `b3`, `b3multi` and `jaeger` loaded only when named; `none` for none (null).
 */
export async function propagatorFrom(env: NodeJS.ProcessEnv, warn: (message: string) => void): Promise<TextMapPropagator | null> {
  const core = await import('@opentelemetry/core');
  const names = [...new Set((env.OTEL_PROPAGATORS ?? '').split(',').map((s) => s.trim()).filter(Boolean))];
  if (names.includes('none')) return null;
  const chosen = names.length > 0 ? names : ['tracecontext', 'baggage'];
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
