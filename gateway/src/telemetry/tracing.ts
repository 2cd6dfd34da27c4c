// OpenTelemetry tracing, configured by the standard OTEL_* variables (exporter, endpoint, protocol
// http/json or http/protobuf, sampler, propagators, span limits, batch processor, resource): sampled on
// this thread with the SDK's sampler and ids (trace-starter.ts, trace-config.ts); a kept request's
// spans are made from its facts and exported in a worker thread by @opentelemetry/sdk-node
// (trace-facts.ts, span-forwarder.ts, trace-export-worker.ts). Nothing of the SDK is loaded when
// tracing is off.
import { Worker } from 'node:worker_threads';
import type { Logger } from 'pino';
import { SpanForwarder, type ExportWorkerData, type ForwarderOptions, type RequestFactsSink } from './span-forwarder.ts';
import { TraceStarter } from './trace-starter.ts';
import { propagatesW3CTraceContextOnly, propagatorFrom, samplerFrom } from './trace-config.ts';

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
  starter: TraceStarter;
  /** Where a kept request's facts go (the forwarder to the export worker). */
  sink: RequestFactsSink;
  /**
   * The propagators write nothing but W3C `traceparent` and `tracestate` for a span: an unsampled
   * request's can be written by hand. Otherwise (B3, Jaeger, none) they write it themselves.
   */
  w3cOnly: boolean;
  /** Exports what is buffered and stops the SDK. */
  shutdown(): Promise<void>;
}

/**
 * Starts tracing: one per process, since OpenTelemetry registers its propagator globally. This thread
 * samples, makes ids and propagates context (trace-starter.ts); a kept request's facts are made into
 * spans and exported in a worker thread by sdk-node, configured from the same OTEL_* variables
 * (docs/adr/0026, 0028).
 */
export async function startTracing(log: Logger, serviceVersion: string): Promise<Tracing> {
  const api = await import('@opentelemetry/api');
  const workerData: ExportWorkerData = { scope: { name: 'tollgate-gateway', version: serviceVersion } };
  const worker = new Worker(new URL('./trace-export-worker.ts', import.meta.url), { workerData });
  // Never what keeps the process alive: shutdown() exports what is left before it stops the worker.
  worker.unref();
  const forwarder = new SpanForwarder(worker, log, await forwardingFromEnv());
  const { hrTime } = await import('@opentelemetry/core');
  const { RandomIdGenerator } = await import('@opentelemetry/sdk-trace-base');
  const starter = new TraceStarter({ sampler: await samplerFrom(process.env, (message) => log.warn(message)), ids: new RandomIdGenerator(), now: () => hrTime() });
  const propagator = await propagatorFrom(process.env, (message) => log.warn(message));
  if (propagator) api.propagation.setGlobalPropagator(propagator);
  log.info(
    { exporter: process.env.OTEL_TRACES_EXPORTER ?? 'otlp', protocol: process.env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL ?? process.env.OTEL_EXPORTER_OTLP_PROTOCOL ?? 'http/protobuf', sampler: process.env.OTEL_TRACES_SAMPLER ?? 'parentbased_always_on' },
    'tracing on',
  );
  return {
    starter,
    sink: forwarder,
    w3cOnly: propagatesW3CTraceContextOnly(process.env),
    async shutdown() {
      await forwarder.shutdown().catch((error: Error) => log.warn({ err: error }, 'tracing shutdown failed'));
      // Lets a later start in the same process (tests) register its own propagator.
      api.propagation.disable();
    },
  };
}

/**
 * How spans wait on this side: as many as the SDK's batch processor would hold
 * (OTEL_BSP_MAX_QUEUE_SIZE, OTEL_BSP_MAX_EXPORT_BATCH_SIZE), posted at most a quarter-second after the
 * first of them (sooner when OTEL_BSP_SCHEDULE_DELAY is shorter). Each post wakes the worker, which
 * costs the gateway more than the spans it carries, so posts are kept few (ADR 26).
 */
async function forwardingFromEnv(): Promise<ForwarderOptions> {
  // The SDK's own reader of its variables, so that they mean here what they mean to its processor.
  const { getNumberFromEnv } = await import('@opentelemetry/core');
  const positive = (name: string, fallback: number) => {
    const value = getNumberFromEnv(name);
    return value !== undefined && value > 0 ? value : fallback;
  };
  const maxQueueSize = positive('OTEL_BSP_MAX_QUEUE_SIZE', 2048);
  return {
    maxQueueSize,
    batchSize: Math.min(positive('OTEL_BSP_MAX_EXPORT_BATCH_SIZE', 512), maxQueueSize),
    delayMs: Math.min(positive('OTEL_BSP_SCHEDULE_DELAY', 5000), 250),
  };
}
