// One request's telemetry while it runs: its place among the requests in flight (for the gauges), the
// time its stream started, and — when tracing is on — its trace: the span context that goes on the
// access line and upstream, and, for a trace the sampler kept, the facts its spans are made of (its
// times, each upstream attempt's span id, times and outcome), posted to the export worker when the
// request ends (docs/adr/0028). With tracing off every method here is a field check and a return.
import type { IncomingHttpHeaders, ServerResponse } from 'node:http';
import { propagation, ROOT_CONTEXT, SpanKind, trace, TraceFlags, type HrTime, type SpanContext } from '@opentelemetry/api';
import type { Upstream } from '@tollgate/crds';
import type { Exchange, TraceIds } from '../exchange/exchange.ts';
import { contentAttributes } from './content-capture.ts';
import { identityOf } from './genai.ts';
import type { FinishedRequest } from './request-record.ts';
import type { SpanContextRecord } from './span-record.ts';
import type { AttemptFacts, RequestFacts } from './trace-facts.ts';
import type { Tracing } from './tracing.ts';

export type { TraceIds };

const TRACEPARENT = 'traceparent';
const TRACESTATE = 'tracestate';
/** An end time not yet known. */
const NOT_ENDED: HrTime = [0, 0];

/** What a kept trace gathers while its request runs; the rest comes from the finished request. */
interface KeptTrace {
  startTime: HrTime;
  parent: SpanContextRecord | undefined;
  samplerAttributes: RequestFacts['samplerAttributes'];
  attempts: AttemptFacts[];
}

export class RequestTelemetry {
  readonly #exchange: Exchange;
  readonly #res: ServerResponse;
  readonly #headers: IncomingHttpHeaders;
  readonly #tracing: Pick<Tracing, 'starter' | 'sink' | 'w3cOnly'> | null;
  /** The server span's context; null with tracing off. */
  readonly #context: SpanContext | null = null;
  readonly #kept: KeptTrace | null = null;
  /** The attempt in flight (or the one whose answer is being relayed), in a kept trace. */
  #attempt: AttemptFacts | null = null;

  constructor(exchange: Exchange, res: ServerResponse, headers: IncomingHttpHeaders, tracing: Pick<Tracing, 'starter' | 'sink' | 'w3cOnly'> | null, captureContent = false) {
    this.#exchange = exchange;
    this.#res = res;
    this.#headers = headers;
    this.#tracing = tracing;
    if (!tracing) return;
    // An incoming W3C traceparent makes this request a child of the caller's span (and its sampling
    // decision the caller's, under the parent-based samplers).
    const parent = propagation.extract(ROOT_CONTEXT, headers);
    const start = tracing.starter.start(exchange.method, SpanKind.SERVER, parent);
    this.#context = start.context;
    if (!start.kept) return;
    this.#kept = { startTime: tracing.starter.now(), parent: start.parent, samplerAttributes: start.samplerAttributes, attempts: [] };
    // Contents are kept only for a trace that is recorded, and only when switched on.
    if (captureContent) exchange.content = { input: null, output: null, streamed: [], streamedChars: 0 };
  }

  get streaming(): boolean {
    return this.#exchange.firstByteAt !== null;
  }

  /** Bytes written to the response that its socket has not taken yet. */
  bufferedBytes(): number {
    return this.#res.writableLength;
  }

  /** The server span's ids (for the access line and exemplars); null with tracing off. */
  ids(): TraceIds | null {
    const context = this.#context;
    if (!context) return null;
    return { traceId: context.traceId, spanId: context.spanId, sampled: (context.traceFlags & TraceFlags.SAMPLED) !== 0 };
  }

  /** An upstream attempt begins: in a kept trace, a client span's id and start, child of the server span. */
  attemptStarted(upstream: Upstream, upstreamModel: string | null, number: number): void {
    // A trace that is not kept (most of them, at a ratio) gathers nothing: the upstream is given the
    // server span's context (inject) — as cheap as it gets.
    const kept = this.#kept;
    if (!kept) return;
    const starter = this.#tracing!.starter;
    // An attempt whose 200 was kept open for its answer, then failed before its content (a translated
    // stream's overload event): it ended when the next began, with the error its record was given.
    const failed = this.#attempt;
    if (failed) {
      failed.endTime = starter.now();
      failed.error ??= this.#exchange.attempts.at(-2)?.error ?? undefined;
    }
    const identity = identityOf(upstream);
    const attempt: AttemptFacts = {
      spanId: starter.spanId(),
      startTime: starter.now(),
      endTime: NOT_ENDED,
      number,
      upstream: upstream.metadata.name,
      provider: identity.provider,
      address: identity.address,
      port: identity.port,
      upstreamModel,
      status: undefined,
      error: undefined,
      openAtEnd: false,
    };
    kept.attempts.push(attempt);
    this.#attempt = attempt;
  }

  /**
   * The headers an upstream call carries for tracing: the attempt's span as traceparent (the server
   * span's when the trace is not kept); with tracing off, the caller's own traceparent and tracestate
   * passed through, so its trace still connects.
   */
  inject(headers: Record<string, string>): void {
    const context = this.#context;
    if (context) {
      const spanId = this.#attempt ? this.#attempt.spanId : context.spanId;
      // By hand when W3C trace context is all the propagators would write, else in the form they
      // write (B3, Jaeger).
      if (!this.#tracing!.w3cOnly) {
        const span = trace.wrapSpanContext(spanId === context.spanId ? context : { ...context, spanId });
        return propagation.inject(trace.setSpan(ROOT_CONTEXT, span), headers);
      }
      headers[TRACEPARENT] = `00-${context.traceId}-${spanId}-0${context.traceFlags & TraceFlags.SAMPLED}`;
      if (context.traceState) headers[TRACESTATE] = context.traceState.serialize();
      return;
    }
    const parent = this.#headers[TRACEPARENT];
    if (typeof parent === 'string') {
      headers[TRACEPARENT] = parent;
      const state = this.#headers[TRACESTATE];
      if (typeof state === 'string') headers[TRACESTATE] = state;
    }
  }

  /** An attempt has its outcome; the one whose answer is relayed stays open until the request ends. */
  attemptEnded(status: number | undefined, error: string | undefined, relayed: boolean): void {
    const attempt = this.#attempt;
    if (!attempt) return;
    attempt.status = status;
    attempt.error = error;
    if (relayed) return;
    attempt.endTime = this.#tracing!.starter.now();
    this.#attempt = null;
  }

  /** A kept trace's facts, with what the finished request knows, go to the export worker. */
  finish(request: FinishedRequest): void {
    const kept = this.#kept;
    if (!kept) return;
    const context = this.#context!;
    const tracing = this.#tracing!;
    const endTime = tracing.starter.now();
    const open = this.#attempt;
    if (open) {
      open.endTime = endTime;
      open.openAtEnd = true;
      this.#attempt = null;
    }
    const exchange = this.#exchange;
    const content = exchange.content;
    const facts: RequestFacts = {
      traceId: context.traceId,
      spanId: context.spanId,
      traceState: context.traceState?.serialize(),
      parent: kept.parent,
      samplerAttributes: kept.samplerAttributes,
      startTime: kept.startTime,
      endTime,
      method: exchange.method,
      path: exchange.path,
      requestId: exchange.id,
      attempts: kept.attempts,
      request,
      abortReason: exchange.abortReason ?? undefined,
      imageFetch: exchange.imageFetch ?? undefined,
      content: content && request.operation ? contentAttributes(content, request.finishReasons) : undefined,
    };
    tracing.sink.add(facts);
  }
}
