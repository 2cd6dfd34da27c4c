// OpenTelemetry tracing through @opentelemetry/sdk-node, configured by the standard OTEL_* variables
// (exporter, endpoint, protocol http/json or http/protobuf, sampler, batch processor, resource), with
// the export in a worker thread (span-forwarder.ts, trace-export-worker.ts). The
// SDK is loaded only when tracing is on: it pulls in every exporter, which a gateway that does not
// trace should not pay for, at start-up or per request.
import type { Tracer } from '@opentelemetry/api';
import { Worker } from 'node:worker_threads';
import type { Logger } from 'pino';
import { SpanForwarder, type ForwarderOptions } from './span-forwarder.ts';

export interface TracingConfig {
  enabled: boolean;
  /** Why it is on or off, for the start-up log line. */
  reason: string;
  /** OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true: prompts and answers on spans (off by default). */
  captureContent?: boolean;
}

/**
 * Tracing is on when OTEL_SDK_DISABLED is not `true` and an exporter is configured: an OTLP endpoint
 * (OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT), or OTEL_TRACES_EXPORTER naming
 * one other than `none`. Nothing configured means off — the SDK's own default (OTLP to localhost)
 * would export into the void on most machines.
 */
export function tracingConfigFrom(env: NodeJS.ProcessEnv): TracingConfig {
  return { ...tracingSwitch(env), captureContent: env.OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT?.trim().toLowerCase() === 'true' };
}

function tracingSwitch(env: NodeJS.ProcessEnv): TracingConfig {
  if (env.OTEL_SDK_DISABLED?.trim().toLowerCase() === 'true') return { enabled: false, reason: 'OTEL_SDK_DISABLED=true' };
  const exporters = (env.OTEL_TRACES_EXPORTER ?? '').split(',').map((s) => s.trim()).filter(Boolean);
  if (exporters.includes('none')) return { enabled: false, reason: 'OTEL_TRACES_EXPORTER=none' };
  if (exporters.length > 0) return { enabled: true, reason: `OTEL_TRACES_EXPORTER=${exporters.join(',')}` };
  if (env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT || env.OTEL_EXPORTER_OTLP_ENDPOINT) return { enabled: true, reason: 'OTLP endpoint configured' };
  return { enabled: false, reason: 'no exporter configured' };
}

export interface Tracing {
  tracer: Tracer;
  /** Exports what is buffered and stops the SDK. */
  shutdown(): Promise<void>;
}

/**
 * Starts the SDK: one per process, since OpenTelemetry registers its providers globally. This thread's
 * SDK samples, makes ids and propagates context; what it records is exported from a worker thread
 * (docs/adr/0026), by an SDK configured from the same OTEL_* variables.
 */
export async function startTracing(log: Logger, serviceVersion: string): Promise<Tracing> {
  const [{ NodeSDK }, api] = await Promise.all([import('@opentelemetry/sdk-node'), import('@opentelemetry/api')]);
  const worker = new Worker(new URL('./trace-export-worker.ts', import.meta.url));
  // Never what keeps the process alive: shutdown() exports what is left before it stops the worker.
  worker.unref();
  const forwarder = new SpanForwarder(worker, log, forwardingFrom(process.env));
  const sdk = new NodeSDK({
    // The resource is the worker's: spans leave this thread as records, without it.
    autoDetectResources: false,
    // Traces only: metrics are Prometheus's (metrics.ts), logs are pino's lines on stdout.
    metricReaders: [],
    logRecordProcessors: [],
    instrumentations: [],
    spanProcessors: [forwarder],
  });
  sdk.start();
  log.info(
    { exporter: process.env.OTEL_TRACES_EXPORTER ?? 'otlp', protocol: process.env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL ?? process.env.OTEL_EXPORTER_OTLP_PROTOCOL ?? 'http/protobuf', sampler: process.env.OTEL_TRACES_SAMPLER ?? 'parentbased_always_on' },
    'tracing on',
  );
  return {
    tracer: api.trace.getTracer('tollgate-gateway', serviceVersion),
    async shutdown() {
      await sdk.shutdown().catch((error: Error) => log.warn({ err: error }, 'tracing shutdown failed'));
      // Lets a later start in the same process (tests) register its own providers.
      api.trace.disable();
      api.propagation.disable();
      api.context.disable();
    },
  };
}

/**
 * How spans wait on this side: as many as the SDK's batch processor would hold
 * (OTEL_BSP_MAX_QUEUE_SIZE, OTEL_BSP_MAX_EXPORT_BATCH_SIZE), posted at most a quarter-second after the
 * first of them (sooner when OTEL_BSP_SCHEDULE_DELAY is shorter). Each post wakes the worker, which
 * costs the gateway more than the spans it carries, so posts are kept few (ADR 26).
 */
export function forwardingFrom(env: NodeJS.ProcessEnv): ForwarderOptions {
  const positive = (value: string | undefined, fallback: number) => {
    const n = Number(value);
    return value !== undefined && value.trim() !== '' && Number.isFinite(n) && n > 0 ? n : fallback;
  };
  const maxQueueSize = positive(env.OTEL_BSP_MAX_QUEUE_SIZE, 2048);
  return {
    maxQueueSize,
    batchSize: Math.min(positive(env.OTEL_BSP_MAX_EXPORT_BATCH_SIZE, 512), maxQueueSize),
    delayMs: Math.min(positive(env.OTEL_BSP_SCHEDULE_DELAY, 5000), 250),
  };
}
