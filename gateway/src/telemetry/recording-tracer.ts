// The main thread's tracer (docs/adr/0027): it samples with the SDK's sampler and makes ids with the
// SDK's id generator, and a span it keeps is written straight into the plain record that crosses to
// the export worker. The worker's SDK does the rest of what a span is: it checks each attribute, applies
// the span limits (OTEL_SPAN_*, OTEL_ATTRIBUTE_*) and exports. Why not the SDK's tracer and span here:
// its span validates and counts on every call, and that code, run for one request in ten, cost the
// event loop several times what it costs in a loop of its own (measured in docs/benchmarks.md).
import {
  context as contexts,
  SamplingDecision,
  SpanKind,
  SpanStatusCode,
  trace,
  TraceFlags,
  type Attributes,
  type AttributeValue,
  type Context,
  type Exception,
  type HrTime,
  type Link,
  type Sampler,
  type Span,
  type SpanContext,
  type SpanOptions,
  type SpanStatus,
  type TimeInput,
} from '@opentelemetry/api';
import type { IdGenerator } from '@opentelemetry/sdk-trace-base';
import type { SpanContextRecord, SpanRecord, SpanSink } from './span-record.ts';

/** The part of a tracer the gateway uses: spans started against an explicit parent context. */
export interface SpanStarter {
  startSpan(name: string, options?: SpanOptions, context?: Context): Span;
}

/** Time helpers of @opentelemetry/core, so that times mean what they mean to the SDK. */
export interface Clock {
  now(): HrTime;
  toHrTime(time: TimeInput): HrTime;
  isTimeInput(value: unknown): value is TimeInput;
}

// What a sampler is given when a span has none: one of each, not one per request.
const NO_ATTRIBUTES: Attributes = Object.freeze({});
const NO_LINKS: Link[] = Object.freeze([]) as unknown as Link[];

export class RecordingTracer implements SpanStarter {
  readonly #sampler: Sampler;
  readonly #ids: IdGenerator;
  readonly #sink: SpanSink;
  readonly #clock: Clock;
  readonly #scope: SpanRecord['scope'];

  constructor(options: { sampler: Sampler; ids: IdGenerator; sink: SpanSink; clock: Clock; scope: SpanRecord['scope'] }) {
    this.#sampler = options.sampler;
    this.#ids = options.ids;
    this.#sink = options.sink;
    this.#clock = options.clock;
    this.#scope = options.scope;
  }

  /** As the SDK's tracer: a child of the context's valid span (its trace, its trace state), else a new trace. */
  startSpan(name: string, options: SpanOptions = {}, context: Context = contexts.active()): Span {
    const parent = trace.getSpanContext(context);
    const validParent = parent && trace.isSpanContextValid(parent) ? parent : undefined;
    const traceId = validParent ? validParent.traceId : this.#ids.generateTraceId();
    const spanId = this.#ids.generateSpanId();
    const kind = options.kind ?? SpanKind.INTERNAL;
    const links = options.links ?? NO_LINKS;
    const result = this.#sampler.shouldSample(context, traceId, name, kind, options.attributes ?? NO_ATTRIBUTES, links);
    const sampled = result.decision === SamplingDecision.RECORD_AND_SAMPLED;
    const spanContext: SpanContext = { traceId, spanId, traceFlags: sampled ? TraceFlags.SAMPLED : TraceFlags.NONE, traceState: result.traceState ?? validParent?.traceState };
    if (result.decision === SamplingDecision.NOT_RECORD) return trace.wrapSpanContext(spanContext);
    const record: SpanRecord = {
      scope: this.#scope,
      name,
      kind,
      traceId,
      spanId,
      traceState: spanContext.traceState?.serialize(),
      parent: validParent ? contextRecord(validParent) : undefined,
      startTime: options.startTime === undefined ? this.#clock.now() : this.#clock.toHrTime(options.startTime),
      endTime: [0, 0],
      attributes: {},
      events: [],
      links: [],
      status: { code: SpanStatusCode.UNSET },
    };
    const span = new RecordingSpan(spanContext, record, sampled ? this.#sink : null, this.#clock);
    if (options.attributes) span.setAttributes(options.attributes);
    if (result.attributes) span.setAttributes(result.attributes);
    span.addLinks(links);
    return span;
  }
}

/**
 * A span being recorded: what is set on it goes into its record as given, and once ended it takes
 * nothing more. A span that was recorded but not sampled (a sampler's RECORD) is not exported.
 */
class RecordingSpan implements Span {
  readonly #context: SpanContext;
  readonly #record: SpanRecord;
  readonly #sink: SpanSink | null;
  readonly #clock: Clock;
  #ended = false;

  constructor(context: SpanContext, record: SpanRecord, sink: SpanSink | null, clock: Clock) {
    this.#context = context;
    this.#record = record;
    this.#sink = sink;
    this.#clock = clock;
  }

  spanContext(): SpanContext {
    return this.#context;
  }

  isRecording(): boolean {
    return !this.#ended;
  }

  setAttribute(key: string, value: AttributeValue | undefined): this {
    // As the SDK's span: null and undefined set nothing. Every other check is the worker's SDK's.
    if (!this.#ended && value !== undefined && value !== null) this.#record.attributes[key] = value;
    return this;
  }

  setAttributes(attributes: Attributes): this {
    for (const key in attributes) this.setAttribute(key, attributes[key]);
    return this;
  }

  addEvent(name: string, attributesOrTime?: Attributes | TimeInput, time?: TimeInput): this {
    if (this.#ended) return this;
    const timeGiven = this.#clock.isTimeInput(attributesOrTime);
    const at = timeGiven ? attributesOrTime : time;
    this.#record.events.push({
      name,
      attributes: timeGiven ? undefined : (attributesOrTime as Attributes | undefined),
      time: at === undefined ? this.#clock.now() : this.#clock.toHrTime(at),
    });
    return this;
  }

  addLink(link: Link): this {
    if (!this.#ended) this.#record.links.push({ context: contextRecord(link.context), attributes: link.attributes });
    return this;
  }

  addLinks(links: Link[]): this {
    for (const link of links) this.addLink(link);
    return this;
  }

  setStatus(status: SpanStatus): this {
    // As the SDK's span: UNSET changes nothing, and OK is final.
    if (this.#ended || status.code === SpanStatusCode.UNSET || this.#record.status.code === SpanStatusCode.OK) return this;
    this.#record.status = status.code === SpanStatusCode.ERROR && status.message !== undefined ? { code: status.code, message: status.message } : { code: status.code };
    return this;
  }

  updateName(name: string): this {
    if (!this.#ended) this.#record.name = name;
    return this;
  }

  recordException(exception: Exception, time?: TimeInput): void {
    const attributes: Attributes = {};
    if (typeof exception === 'string') attributes['exception.message'] = exception;
    else if (exception) {
      const type = exception.code ? String(exception.code) : exception.name;
      if (type) attributes['exception.type'] = type;
      if (exception.message) attributes['exception.message'] = exception.message;
      if (exception.stack) attributes['exception.stacktrace'] = exception.stack;
    }
    // The conventions' minimum: a type or a message.
    if (attributes['exception.type'] || attributes['exception.message']) this.addEvent('exception', attributes, time);
  }

  end(endTime?: TimeInput): void {
    if (this.#ended) return;
    this.#ended = true;
    this.#record.endTime = endTime === undefined ? this.#clock.now() : this.#clock.toHrTime(endTime);
    this.#sink?.add(this.#record);
  }
}

function contextRecord(context: SpanContext): SpanContextRecord {
  return { traceId: context.traceId, spanId: context.spanId, traceFlags: context.traceFlags, isRemote: context.isRemote, traceState: context.traceState?.serialize() };
}
