// The event loop's end of trace export (docs/adr/0026): the SDK's span processor in the gateway's main
// thread. An ended, sampled span becomes a plain record, queued and posted in batches to the trace
// export worker (trace-export-worker.ts), which exports it with the exporter the OTEL_* variables name.
// Why not the SDK's batch processor and exporter here: the exporter's HTTP client and serialiser, run
// on the event loop every few seconds, made every request dearer (measured in docs/benchmarks.md).
import { SpanStatusCode, TraceFlags, type Attributes, type HrTime, type SpanKind } from '@opentelemetry/api';
import type { ReadableSpan, SpanProcessor } from '@opentelemetry/sdk-trace-base';
import type { Worker } from 'node:worker_threads';
import type { Logger } from 'pino';

/** What a span becomes to cross to the worker: data that survives structured cloning. */
export interface SpanRecord {
  scope: { name: string; version?: string };
  name: string;
  kind: SpanKind;
  traceId: string;
  spanId: string;
  traceState?: string;
  parent?: SpanContextRecord;
  startTime: HrTime;
  endTime: HrTime;
  attributes: Attributes;
  events: Array<{ name: string; attributes?: Attributes; time: HrTime }>;
  links: Array<{ context: SpanContextRecord; attributes?: Attributes }>;
  status: { code: SpanStatusCode; message?: string };
}

export interface SpanContextRecord {
  traceId: string;
  spanId: string;
  traceFlags: number;
  isRemote?: boolean;
  traceState?: string;
}

export type ToExportWorker = { type: 'spans'; spans: SpanRecord[] } | { type: 'flush' | 'shutdown'; id: number };
/** `taken`: a batch of spans was handed to the worker's SDK (so no longer held in the message queue). */
export type FromExportWorker = { type: 'done'; id: number } | { type: 'taken'; count: number } | { type: 'failed'; message: string };

export interface ForwarderOptions {
  /** Spans queued here or posted and not yet taken, at most; more are dropped (OTEL_BSP_MAX_QUEUE_SIZE, as the SDK's processor). */
  maxQueueSize: number;
  /** Spans per message at most. */
  batchSize: number;
  /** How long a span may wait to be posted. */
  delayMs: number;
}

export class SpanForwarder implements SpanProcessor {
  readonly #worker: Worker;
  readonly #log: Logger;
  readonly #options: ForwarderOptions;
  #queue: SpanRecord[] = [];
  #timer: NodeJS.Timeout | null = null;
  #gone = false;
  /** shutdown() has begun: the worker's exit is expected. */
  #stopping = false;
  /** Spans posted that the worker has not taken yet: with the queue, what this side holds. */
  #inFlight = 0;
  #dropped = 0;
  #droppedWarnedAt = -Infinity;
  #nextId = 1;
  readonly #waiting = new Map<number, () => void>();

  constructor(worker: Worker, log: Logger, options: ForwarderOptions) {
    this.#worker = worker;
    this.#log = log;
    this.#options = options;
    worker.on('message', (message: FromExportWorker) => {
      if (message.type === 'taken') return void (this.#inFlight -= message.count);
      if (message.type === 'failed') return log.warn({ reason: message.message }, 'trace export worker: a batch could not be exported');
      this.#waiting.get(message.id)?.();
      this.#waiting.delete(message.id);
    });
    const gone = (reason: string) => {
      if (this.#gone) return;
      this.#gone = true;
      this.#queue = [];
      if (!this.#stopping) log.warn({ reason }, 'the trace export worker stopped: spans are no longer exported');
      for (const done of this.#waiting.values()) done();
      this.#waiting.clear();
    };
    worker.on('error', (error) => gone(error.message));
    worker.on('exit', (code) => gone(`exit code ${code}`));
  }

  onStart(): void {}

  onEnd(span: ReadableSpan): void {
    if (this.#gone) return;
    const context = span.spanContext();
    // As the SDK's batch processor: only sampled spans are exported.
    if ((context.traceFlags & TraceFlags.SAMPLED) === 0) return;
    if (this.#queue.length + this.#inFlight >= this.#options.maxQueueSize) {
      // Said at once, then at most once a minute with how many since.
      this.#dropped++;
      if (performance.now() - this.#droppedWarnedAt > 60_000) {
        this.#log.warn({ dropped: this.#dropped, maxQueueSize: this.#options.maxQueueSize }, 'trace export is behind: spans dropped');
        this.#dropped = 0;
        this.#droppedWarnedAt = performance.now();
      }
      return;
    }
    this.#queue.push(recordOf(span));
    if (this.#queue.length >= this.#options.batchSize) this.#post();
    else this.#timer ??= setTimeout(() => this.#post(), this.#options.delayMs).unref();
  }

  /** Posts what is queued and waits until the worker has exported it. */
  forceFlush(): Promise<void> {
    return this.#ask('flush');
  }

  /** Exports what is left, then stops the worker. */
  async shutdown(): Promise<void> {
    this.#stopping = true;
    await this.#ask('shutdown');
    await this.#worker.terminate();
  }

  #post(): void {
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = null;
    while (this.#queue.length > 0 && !this.#gone) {
      const spans = this.#queue.splice(0, this.#options.batchSize);
      this.#inFlight += spans.length;
      this.#worker.postMessage({ type: 'spans', spans } satisfies ToExportWorker);
    }
  }

  #ask(type: 'flush' | 'shutdown'): Promise<void> {
    this.#post();
    if (this.#gone) return Promise.resolve();
    const id = this.#nextId++;
    return new Promise((resolve) => {
      this.#waiting.set(id, resolve);
      this.#worker.postMessage({ type, id } satisfies ToExportWorker);
    });
  }
}

function recordOf(span: ReadableSpan): SpanRecord {
  const context = span.spanContext();
  const scope = span.instrumentationScope;
  return {
    scope: { name: scope.name, version: scope.version },
    name: span.name,
    kind: span.kind,
    traceId: context.traceId,
    spanId: context.spanId,
    traceState: context.traceState?.serialize(),
    parent: span.parentSpanContext ? contextRecord(span.parentSpanContext) : undefined,
    startTime: span.startTime,
    endTime: span.endTime,
    attributes: span.attributes,
    events: span.events.map((e) => ({ name: e.name, attributes: e.attributes, time: e.time })),
    links: span.links.map((l) => ({ context: contextRecord(l.context), attributes: l.attributes })),
    status: span.status.code === SpanStatusCode.ERROR ? { code: span.status.code, message: span.status.message } : { code: span.status.code },
  };
}

function contextRecord(context: ReadableSpan['links'][number]['context']): SpanContextRecord {
  return { traceId: context.traceId, spanId: context.spanId, traceFlags: context.traceFlags, isRemote: context.isRemote, traceState: context.traceState?.serialize() };
}
