// The trace export worker (docs/adr/0026, 0028): the facts of each kept request's trace arrive here
// from the gateway's event loop (trace-facts.ts, span-forwarder.ts), are made into span records
// (spansOf), and exported by an SDK of this thread's own, configured by the same OTEL_* variables:
// exporter, endpoint, protocol, headers, compression, span limits, batch processor, resource.
// Replaying a record through this SDK's span is where its attributes are checked and the span limits
// applied. Each record is replayed as the span it is: its ids through an id generator that hands out
// the record's own, its sampling decision through a sampler that keeps every replayed span, its times,
// attributes, events, links and status as recorded.
import { parentPort, workerData } from 'node:worker_threads';
import { createTraceState, ROOT_CONTEXT, SamplingDecision, trace, type Context, type Tracer } from '@opentelemetry/api';
import { NodeSDK } from '@opentelemetry/sdk-node';
import type { ExportWorkerData, FromExportWorker, ToExportWorker } from './span-forwarder.ts';
import type { SpanContextRecord, SpanRecord } from './span-record.ts';
import { spanCountOf, spansOf } from './trace-facts.ts';

const port = parentPort!;
const { scope } = workerData as ExportWorkerData;
let replaying: SpanRecord | null = null;

const sdk = new NodeSDK({
  // OTEL_SERVICE_NAME, else service.name in OTEL_RESOURCE_ATTRIBUTES, else the gateway's own name.
  serviceName: process.env.OTEL_SERVICE_NAME || (process.env.OTEL_RESOURCE_ATTRIBUTES?.includes('service.name=') ? undefined : 'tollgate-gateway'),
  metricReaders: [],
  logRecordProcessors: [],
  instrumentations: [],
  idGenerator: {
    generateTraceId: () => replaying!.traceId,
    generateSpanId: () => replaying!.spanId,
  },
  // The main thread's sampler decided; every span that reaches this thread was kept.
  sampler: {
    shouldSample: () => ({ decision: SamplingDecision.RECORD_AND_SAMPLED, traceState: replaying?.traceState ? createTraceState(replaying.traceState) : undefined }),
    toString: () => 'ReplaySampler',
  },
});
sdk.start();

const tracers = new Map<string, Tracer>();
function tracerFor(scope: SpanRecord['scope']): Tracer {
  const key = `${scope.name}@${scope.version ?? ''}`;
  let tracer = tracers.get(key);
  if (!tracer) tracers.set(key, (tracer = trace.getTracer(scope.name, scope.version)));
  return tracer;
}

const spanContextOf = (record: SpanContextRecord) => ({
  traceId: record.traceId,
  spanId: record.spanId,
  traceFlags: record.traceFlags,
  isRemote: record.isRemote,
  traceState: record.traceState ? createTraceState(record.traceState) : undefined,
});

function replay(record: SpanRecord): void {
  replaying = record;
  try {
    const parent: Context = record.parent ? trace.setSpanContext(ROOT_CONTEXT, spanContextOf(record.parent)) : ROOT_CONTEXT;
    const links = record.links.map((link) => ({ context: spanContextOf(link.context), attributes: link.attributes }));
    const span = tracerFor(record.scope).startSpan(record.name, { kind: record.kind, startTime: record.startTime, attributes: record.attributes, links }, parent);
    for (const event of record.events) span.addEvent(event.name, event.attributes, event.time);
    span.setStatus(record.status);
    span.end(record.endTime);
  } finally {
    replaying = null;
  }
}

port.on('message', (message: ToExportWorker) => {
  if (message.type === 'requests') {
    try {
      for (const facts of message.requests) for (const record of spansOf(facts, scope)) replay(record);
    } catch (error) {
      port.postMessage({ type: 'failed', message: (error as Error).message } satisfies FromExportWorker);
    } finally {
      // In spans, as the forwarder counted them, whatever became of them.
      const count = message.requests.reduce((sum, facts) => sum + spanCountOf(facts), 0);
      port.postMessage({ type: 'taken', count } satisfies FromExportWorker);
    }
    return;
  }
  const done = () => port.postMessage({ type: 'done', id: message.id } satisfies FromExportWorker);
  // Shutdown: the batch processor exports what it holds before the SDK stops.
  sdk.shutdown().then(done, done);
});

