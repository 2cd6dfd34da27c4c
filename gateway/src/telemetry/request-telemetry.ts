// One request's telemetry while it runs: its place among the requests in flight (for the gauges), the
// time its stream started, and — when tracing is on — its server span and one client span per
// upstream attempt. With tracing off every method here is a field check and a return.
import type { IncomingHttpHeaders, ServerResponse } from 'node:http';
import { propagation, ROOT_CONTEXT, SpanKind, SpanStatusCode, trace, TraceFlags, type Attributes, type Context, type Span } from '@opentelemetry/api';
import type { Upstream } from '@tollgate/crds';
import type { Exchange, TraceIds } from '../exchange/exchange.ts';
import { contentAttributes } from './content-capture.ts';
import { identityOf, operationOf } from './genai.ts';
import type { FinishedRequest } from './request-record.ts';
import type { Tracing } from './tracing.ts';

export type { TraceIds };

const SERVER_SPAN = { kind: SpanKind.SERVER };
const TRACEPARENT = 'traceparent';
const TRACESTATE = 'tracestate';

export class RequestTelemetry {
  readonly #exchange: Exchange;
  readonly #res: ServerResponse;
  readonly #headers: IncomingHttpHeaders;
  readonly #tracing: Pick<Tracing, 'tracer' | 'w3cOnly'> | null;
  readonly #span: Span | null = null;
  #parent: Context | null = null;
  /** The attempt in flight (or the one whose answer is being relayed). */
  #attempt: Span | null = null;

  constructor(exchange: Exchange, res: ServerResponse, headers: IncomingHttpHeaders, tracing: Pick<Tracing, 'tracer' | 'w3cOnly'> | null, captureContent = false) {
    const { method, path, id: requestId } = exchange;
    this.#exchange = exchange;
    this.#res = res;
    this.#headers = headers;
    this.#tracing = tracing;
    if (!tracing) return;
    // An incoming W3C traceparent makes this request a child of the caller's span (and its sampling
    // decision the caller's, under the parent-based samplers).
    const parent = propagation.extract(ROOT_CONTEXT, headers);
    // Attributes only once the sampler kept the span: the built-in samplers (OTEL_TRACES_SAMPLER)
    // decide on the trace id alone, and a dropped span should cost nothing more.
    const span = tracing.tracer.startSpan(method, SERVER_SPAN, parent);
    this.#span = span;
    if (span.isRecording()) {
      span.updateName(`${method} ${path}`);
      span.setAttributes({ 'http.request.method': method, 'url.path': path, 'tollgate.request_id': requestId });
      // Contents are kept only for a trace that is recorded, and only when switched on.
      if (captureContent) exchange.content = { input: null, output: null, streamed: [], streamedChars: 0 };
    }
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
    if (!this.#span) return null;
    const context = this.#span.spanContext();
    return { traceId: context.traceId, spanId: context.spanId, sampled: (context.traceFlags & TraceFlags.SAMPLED) !== 0 };
  }

  /** An upstream attempt begins: a client span, child of the server span. */
  attemptStarted(upstream: Upstream, upstreamModel: string | null, number: number): void {
    // A trace that is not sampled (most of them, at a ratio) records nothing: no child span is made,
    // and the upstream is given the server span's context (inject) — as cheap as it gets.
    if (!this.#tracing || !this.#span || !this.#span.isRecording()) return;
    const identity = identityOf(upstream);
    const { method, path } = this.#exchange;
    const operation = operationOf(path);
    const attributes: Attributes = {
      'gen_ai.provider.name': identity.provider,
      'server.address': identity.address,
      'server.port': identity.port,
      'http.request.method': method,
      'tollgate.upstream': upstream.metadata.name,
      'tollgate.attempt': number,
    };
    if (operation) attributes['gen_ai.operation.name'] = operation;
    if (upstreamModel) attributes['gen_ai.request.model'] = upstreamModel;
    this.#parent ??= trace.setSpan(ROOT_CONTEXT, this.#span);
    const name = operation ? `${operation}${upstreamModel ? ` ${upstreamModel}` : ''}` : `${method} ${upstream.metadata.name}`;
    this.#attempt = this.#tracing.tracer.startSpan(name, { kind: SpanKind.CLIENT, attributes }, this.#parent);
  }

  /**
   * The headers an upstream call carries for tracing: the attempt's span as traceparent; with tracing
   * off, the caller's own traceparent and tracestate passed through, so its trace still connects.
   */
  inject(headers: Record<string, string>): void {
    if (this.#attempt) {
      propagation.inject(trace.setSpan(ROOT_CONTEXT, this.#attempt), headers);
      return;
    }
    if (this.#span) {
      // Not sampled: the same trace continues upstream, marked unsampled, under the server span's id;
      // by hand when that is all the propagators would write, else in the form they write (B3, Jaeger).
      if (!this.#tracing?.w3cOnly) return propagation.inject(trace.setSpan(ROOT_CONTEXT, this.#span), headers);
      const context = this.#span.spanContext();
      headers[TRACEPARENT] = `00-${context.traceId}-${context.spanId}-0${context.traceFlags & TraceFlags.SAMPLED}`;
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
    const span = this.#attempt;
    if (!span) return;
    if (status !== undefined) span.setAttribute('http.response.status_code', status);
    if (error !== undefined || (status !== undefined && status >= 400)) {
      span.setAttribute('error.type', error ?? String(status));
      span.setStatus({ code: SpanStatusCode.ERROR, message: error });
    }
    if (relayed) return;
    span.end();
    this.#attempt = null;
  }

  /** A decision worth seeing on the trace (circuit open, fallback, limit): an event on the server span. */
  event(name: string, attributes: Attributes): void {
    this.#span?.addEvent(name, attributes);
  }

  /** Ends the spans with what the finished request knows. */
  finish(request: FinishedRequest): void {
    const span = this.#span;
    if (!span) return;
    if (!span.isRecording()) return span.end();
    const attributes: Attributes = { 'http.response.status_code': request.status, 'http.route': request.route };
    if (request.operation) {
      attributes['gen_ai.operation.name'] = request.operation;
      attributes['gen_ai.provider.name'] = request.provider;
      if (request.model) attributes['gen_ai.request.model'] = request.model;
      if (request.responseModelName) attributes['gen_ai.response.model'] = request.responseModelName;
      if (request.finishReasons) attributes['gen_ai.response.finish_reasons'] = request.finishReasons;
      if (request.usage) {
        attributes['gen_ai.usage.input_tokens'] = request.usage.inputTokens;
        attributes['gen_ai.usage.output_tokens'] = request.usage.outputTokens;
      }
    }
    if (request.account) attributes['tollgate.account'] = request.account;
    if (request.plan) attributes['tollgate.plan'] = request.plan;
    if (request.errorType) attributes['error.type'] = request.errorType;
    // Why the request was cut short, when it was: the client went away, a timeout, the gateway stopping.
    const aborted = this.#exchange.abortReason;
    if (aborted) attributes['tollgate.abort_reason'] = aborted;
    const content = this.#exchange.content;
    if (content && request.operation) Object.assign(attributes, contentAttributes(content, request.finishReasons));
    span.setAttributes(attributes);
    span.updateName(request.operation && request.model ? `${request.operation} ${request.model}` : `${request.method} ${request.route}`);
    // A target skipped for its open circuit, and fallbacks: an attempt failed and another followed.
    for (const attempt of request.attempts) if (attempt.skipped) span.addEvent('tollgate.circuit_open', { 'tollgate.upstream': attempt.upstream });
    const calls = request.attempts.filter((a) => !a.skipped);
    for (let i = 0; i + 1 < calls.length; i++) {
      const from = calls[i];
      span.addEvent('tollgate.fallback', { 'tollgate.upstream': from.upstream, 'tollgate.next_upstream': calls[i + 1].upstream, 'error.type': from.errorType ?? '_OTHER' });
    }
    if (request.status === 429 && request.errorReason) span.addEvent('tollgate.rate_limited', { 'tollgate.limit': request.errorReason });
    if (request.status >= 500) span.setStatus({ code: SpanStatusCode.ERROR, message: request.errorType ?? undefined });
    const answering = this.#attempt;
    if (answering) {
      const answered = request.attempts.find((a) => a.answered);
      if (answered) {
        // The upstream's own answer: its model name as it gave it, its finish reasons, its usage.
        if (answered.responseModel) answering.setAttribute('gen_ai.response.model', answered.responseModel);
        if (request.finishReasons) answering.setAttribute('gen_ai.response.finish_reasons', request.finishReasons);
        if (request.usage) answering.setAttributes({ 'gen_ai.usage.input_tokens': request.usage.inputTokens, 'gen_ai.usage.output_tokens': request.usage.outputTokens });
      }
      answering.end();
      this.#attempt = null;
    }
    span.end();
  }
}
