// The event loop's end of trace export (docs/adr/0026, 0028): the facts of each kept request's trace
// (request-telemetry.ts, trace-facts.ts) are queued and posted in batches to the trace export worker
// (trace-export-worker.ts), which makes their spans and exports them with the exporter the OTEL_*
// variables name. Why not the SDK's batch processor and exporter here: the exporter's HTTP client and
// serialiser, run on the event loop every few seconds, made every request dearer (measured in
// docs/benchmarks.md).
import type { Worker } from 'node:worker_threads';
import type { Logger } from 'pino';
import type { SpanRecord } from './span-record.ts';
import { spanCountOf, type RequestFacts } from './trace-facts.ts';

/** What the gateway gives the export worker when it starts it. */
export interface ExportWorkerData {
  /** The instrumentation scope of the gateway's spans. */
  scope: SpanRecord['scope'];
}

export type ToExportWorker = { type: 'requests'; requests: RequestFacts[] } | { type: 'shutdown'; id: number };
/** `taken`: a batch was handed to the worker's SDK (so no longer held in the message queue); `count` in spans. */
export type FromExportWorker = { type: 'done'; id: number } | { type: 'taken'; count: number } | { type: 'failed'; message: string };

export interface ForwarderOptions {
  /** Spans queued here or posted and not yet taken, at most; more are dropped (OTEL_BSP_MAX_QUEUE_SIZE, as the SDK's processor). */
  maxQueueSize: number;
  /** Spans per message at most (a request's spans are never split: one request over it goes alone). */
  batchSize: number;
  /** How long a request's spans may wait to be posted. */
  delayMs: number;
}

/** Where a kept request's facts go when it ends. */
export interface RequestFactsSink {
  add(facts: RequestFacts): void;
}

export class SpanForwarder implements RequestFactsSink {
  readonly #worker: Worker;
  readonly #log: Logger;
  readonly #options: ForwarderOptions;
  #queue: RequestFacts[] = [];
  /** The spans the queued requests make. */
  #queuedSpans = 0;
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
      this.#queuedSpans = 0;
      if (!this.#stopping) log.warn({ reason }, 'the trace export worker stopped: spans are no longer exported');
      for (const done of this.#waiting.values()) done();
      this.#waiting.clear();
    };
    worker.on('error', (error) => gone(error.message));
    worker.on('exit', (code) => gone(`exit code ${code}`));
  }

  /** A kept request has ended: its facts wait here to be posted. */
  add(facts: RequestFacts): void {
    if (this.#gone) return;
    const spans = spanCountOf(facts);
    if (this.#queuedSpans + this.#inFlight + spans > this.#options.maxQueueSize) {
      // Said at once, then at most once a minute with how many since.
      this.#dropped += spans;
      if (performance.now() - this.#droppedWarnedAt > 60_000) {
        this.#log.warn({ dropped: this.#dropped, maxQueueSize: this.#options.maxQueueSize }, 'trace export is behind: spans dropped');
        this.#dropped = 0;
        this.#droppedWarnedAt = performance.now();
      }
      return;
    }
    this.#queue.push(facts);
    this.#queuedSpans += spans;
    if (this.#queuedSpans >= this.#options.batchSize) this.#post();
    else this.#timer ??= setTimeout(() => this.#post(), this.#options.delayMs).unref();
  }

  /** Exports what is left, then stops the worker. */
  async shutdown(): Promise<void> {
    this.#stopping = true;
    await this.#askShutdown();
    await this.#worker.terminate();
  }

  #post(): void {
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = null;
    let start = 0;
    while (start < this.#queue.length && !this.#gone) {
      let end = start;
      let spans = 0;
      do spans += spanCountOf(this.#queue[end++]);
      while (end < this.#queue.length && spans + spanCountOf(this.#queue[end]) <= this.#options.batchSize);
      this.#queuedSpans -= spans;
      try {
        this.#worker.postMessage({ type: 'requests', requests: this.#queue.slice(start, end) } satisfies ToExportWorker);
        this.#inFlight += spans;
      } catch (error) {
        // A value that cannot be cloned (a sampler's attribute, say) costs its batch, never the gateway.
        this.#log.warn({ err: error, spans }, 'trace export: a batch could not be passed to the worker and was dropped');
      }
      start = end;
    }
    this.#queue = [];
  }

  #askShutdown(): Promise<void> {
    this.#post();
    if (this.#gone) return Promise.resolve();
    const id = this.#nextId++;
    return new Promise((resolve) => {
      this.#waiting.set(id, resolve);
      this.#worker.postMessage({ type: 'shutdown', id } satisfies ToExportWorker);
    });
  }
}
