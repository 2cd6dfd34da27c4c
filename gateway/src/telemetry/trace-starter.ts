// The start of a request's trace on the event loop (docs/adr/0027, 0028): the SDK's sampler decides
// and the SDK's id generator makes the ids, as the SDK's tracer would, but no span is made. A trace
// the sampler does not keep is only its span context (for the access line and the traceparent sent
// upstream). A kept one is gathered as facts (request-telemetry.ts, trace-facts.ts) that the export
// worker makes spans from. Why no span here: recording through a span, even one that only assigned into
// a plain record, cost the event loop per kept trace far more than the same code in a loop of its
// own, and the facts are what the request gathers for its metrics anyway (docs/benchmarks.md).
import { SamplingDecision, trace, TraceFlags, type Attributes, type Context, type HrTime, type Link, type Sampler, type SpanContext, type SpanKind } from '@opentelemetry/api';
import type { IdGenerator } from '@opentelemetry/sdk-trace-base';
import type { SpanContextRecord } from './span-record.ts';

// What a sampler is given when a span has none: one of each, not one per request.
const NO_ATTRIBUTES: Attributes = Object.freeze({});
const NO_LINKS: Link[] = Object.freeze([]) as unknown as Link[];

export interface TraceStart {
  /** The span's context: its trace (the parent's, else a new one), its own id, the decision in its flags. */
  context: SpanContext;
  /** The sampler kept it: its facts are exported when the request ends. */
  kept: boolean;
  /** The valid parent it continues, as a record (kept spans only). */
  parent?: SpanContextRecord;
  /** Attributes the sampler gave (kept spans only; the built-in samplers give none). */
  samplerAttributes?: Attributes;
}

export class TraceStarter {
  readonly #sampler: Sampler;
  readonly #ids: IdGenerator;
  readonly #now: () => HrTime;

  constructor(options: { sampler: Sampler; ids: IdGenerator; now: () => HrTime }) {
    this.#sampler = options.sampler;
    this.#ids = options.ids;
    this.#now = options.now;
  }

  /**
   * A span's start, decided as the SDK's tracer decides it: a child of the context's valid span (its
   * trace, its trace state), else a new trace. A sampler's RECORD (record, do not sample) keeps
   * nothing: such a span would never be exported.
   */
  start(name: string, kind: SpanKind, context: Context): TraceStart {
    const parent = trace.getSpanContext(context);
    const validParent = parent && trace.isSpanContextValid(parent) ? parent : undefined;
    const traceId = validParent ? validParent.traceId : this.#ids.generateTraceId();
    const spanId = this.#ids.generateSpanId();
    const result = this.#sampler.shouldSample(context, traceId, name, kind, NO_ATTRIBUTES, NO_LINKS);
    const kept = result.decision === SamplingDecision.RECORD_AND_SAMPLED;
    const spanContext: SpanContext = { traceId, spanId, traceFlags: kept ? TraceFlags.SAMPLED : TraceFlags.NONE, traceState: result.traceState ?? validParent?.traceState };
    if (!kept) return { context: spanContext, kept };
    return { context: spanContext, kept, parent: validParent ? contextRecord(validParent) : undefined, samplerAttributes: result.attributes };
  }

  /** A new span id in a kept trace (an upstream attempt's client span). */
  spanId(): string {
    return this.#ids.generateSpanId();
  }

  /** Now, as the SDK's times are. */
  now(): HrTime {
    return this.#now();
  }
}

function contextRecord(context: SpanContext): SpanContextRecord {
  return { traceId: context.traceId, spanId: context.spanId, traceFlags: context.traceFlags, isRemote: context.isRemote, traceState: context.traceState?.serialize() };
}
