// A kept request's trace as facts (docs/adr/0028): what the event loop knows of a request whose trace
// the sampler kept — its ids and times, each upstream attempt's span id, times and outcome, and the
// FinishedRequest that metrics already built — posted to the export worker once, when the request
// ends. The worker makes the spans from them (spansOf): the server span, and a client span per
// attempt, with the attributes and events the GenAI conventions name. The event loop builds no span.
import { SpanKind, SpanStatusCode, type Attributes, type HrTime } from '@opentelemetry/api';
import { operationOf } from './genai.ts';
import type { FinishedRequest } from './request-record.ts';
import type { SpanContextRecord, SpanRecord } from './span-record.ts';

/** One upstream call of a kept trace, as the attempt observer saw it go out and come back. */
export interface AttemptFacts {
  spanId: string;
  startTime: HrTime;
  /** When its outcome was known; for the attempt still open when the request ended (its answer relayed), that end. */
  endTime: HrTime;
  /** Its place among the request's attempts, counting those skipped for an open circuit (from 1). */
  number: number;
  upstream: string;
  provider: string;
  address: string;
  port: number;
  /** The model name sent upstream, null when the request named none. */
  upstreamModel: string | null;
  status?: number;
  error?: string;
  /** Still open when the request ended: the attempt whose answer was relayed. */
  openAtEnd: boolean;
}

/** A kept request: plain data that survives structured cloning. */
export interface RequestFacts {
  traceId: string;
  /** The server span's id. */
  spanId: string;
  traceState?: string;
  /** The caller's span, when the request continued a trace. */
  parent?: SpanContextRecord;
  /** Attributes the sampler gave the server span (the built-in samplers give none). */
  samplerAttributes?: Attributes;
  startTime: HrTime;
  endTime: HrTime;
  method: string;
  path: string;
  requestId: string;
  attempts: AttemptFacts[];
  request: FinishedRequest;
  /** Why the request was cut short, when it was: the client went away, a timeout, the gateway stopping. */
  abortReason?: string;
  /** Image URLs the gateway fetched for a provider that takes only bytes: how many, their bytes, the time (upstream/with-remote-images.ts). */
  imageFetch?: { images: number; bytes: number; ms: number };
  /** Message contents, when their capture is switched on (content-capture.ts), made on the event loop. */
  content?: Attributes;
}

/** How many spans a kept request makes: what OTEL_BSP_MAX_QUEUE_SIZE counts. */
export const spanCountOf = (facts: RequestFacts): number => 1 + facts.attempts.length;

/** The server span, then one client span per attempt, as records for the worker's SDK to replay. */
export function spansOf(facts: RequestFacts, scope: SpanRecord['scope']): SpanRecord[] {
  const server = serverSpanOf(facts, scope);
  const spans = [server];
  const self = { traceId: facts.traceId, spanId: facts.spanId, traceFlags: 1, traceState: facts.traceState };
  for (const attempt of facts.attempts) spans.push(clientSpanOf(facts, attempt, self, scope));
  return spans;
}

function serverSpanOf(facts: RequestFacts, scope: SpanRecord['scope']): SpanRecord {
  const { request } = facts;
  const attributes: Attributes = { ...facts.samplerAttributes, 'http.request.method': facts.method, 'url.path': facts.path, 'tollgate.request_id': facts.requestId };
  attributes['http.response.status_code'] = request.status;
  attributes['http.route'] = request.route;
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
  if (facts.abortReason) attributes['tollgate.abort_reason'] = facts.abortReason;
  if (facts.imageFetch) {
    attributes['tollgate.image_fetch.images'] = facts.imageFetch.images;
    attributes['tollgate.image_fetch.bytes'] = facts.imageFetch.bytes;
    attributes['tollgate.image_fetch.duration_ms'] = facts.imageFetch.ms;
  }
  if (facts.content && request.operation) Object.assign(attributes, facts.content);

  // Decisions worth seeing on the trace, at the request's end: a target skipped for its open circuit,
  // fallbacks (an attempt failed and another followed), the limit that refused it.
  const at = facts.endTime;
  const events: SpanRecord['events'] = [];
  for (const attempt of request.attempts) if (attempt.skipped) events.push({ name: 'tollgate.circuit_open', attributes: { 'tollgate.upstream': attempt.upstream }, time: at });
  const calls = request.attempts.filter((a) => !a.skipped);
  for (let i = 0; i + 1 < calls.length; i++) {
    const from = calls[i];
    events.push({ name: 'tollgate.fallback', attributes: { 'tollgate.upstream': from.upstream, 'tollgate.next_upstream': calls[i + 1].upstream, 'error.type': from.errorType ?? '_OTHER' }, time: at });
  }
  if (request.status === 429 && request.errorReason) events.push({ name: 'tollgate.rate_limited', attributes: { 'tollgate.limit': request.errorReason }, time: at });

  return {
    scope,
    name: request.operation && request.model ? `${request.operation} ${request.model}` : `${request.method} ${request.route}`,
    kind: SpanKind.SERVER,
    traceId: facts.traceId,
    spanId: facts.spanId,
    traceState: facts.traceState,
    parent: facts.parent,
    startTime: facts.startTime,
    endTime: facts.endTime,
    attributes,
    events,
    links: [],
    status: request.status >= 500 ? errorStatus(request.errorType ?? undefined) : { code: SpanStatusCode.UNSET },
  };
}

function clientSpanOf(facts: RequestFacts, attempt: AttemptFacts, parent: SpanContextRecord, scope: SpanRecord['scope']): SpanRecord {
  const operation = operationOf(facts.path);
  const attributes: Attributes = {
    'gen_ai.provider.name': attempt.provider,
    'server.address': attempt.address,
    'server.port': attempt.port,
    'http.request.method': facts.method,
    'tollgate.upstream': attempt.upstream,
    'tollgate.attempt': attempt.number,
  };
  if (operation) attributes['gen_ai.operation.name'] = operation;
  if (attempt.upstreamModel) attributes['gen_ai.request.model'] = attempt.upstreamModel;
  if (attempt.status !== undefined) attributes['http.response.status_code'] = attempt.status;
  const failed = attempt.error !== undefined || (attempt.status !== undefined && attempt.status >= 400);
  if (failed) attributes['error.type'] = attempt.error ?? String(attempt.status);
  const { request } = facts;
  const answered = attempt.openAtEnd ? request.attempts.find((a) => a.answered) : undefined;
  if (answered) {
    // The upstream's own answer: its model name as it gave it, its finish reasons, its usage.
    if (answered.responseModel) attributes['gen_ai.response.model'] = answered.responseModel;
    if (request.finishReasons) attributes['gen_ai.response.finish_reasons'] = request.finishReasons;
    if (request.usage) {
      attributes['gen_ai.usage.input_tokens'] = request.usage.inputTokens;
      attributes['gen_ai.usage.output_tokens'] = request.usage.outputTokens;
    }
  }
  return {
    scope,
    name: operation ? `${operation}${attempt.upstreamModel ? ` ${attempt.upstreamModel}` : ''}` : `${facts.method} ${attempt.upstream}`,
    kind: SpanKind.CLIENT,
    traceId: facts.traceId,
    spanId: attempt.spanId,
    traceState: facts.traceState,
    parent,
    startTime: attempt.startTime,
    endTime: attempt.endTime,
    attributes,
    events: [],
    links: [],
    status: failed ? errorStatus(attempt.error) : { code: SpanStatusCode.UNSET },
  };
}

const errorStatus = (message: string | undefined): SpanRecord['status'] => (message === undefined ? { code: SpanStatusCode.ERROR } : { code: SpanStatusCode.ERROR, message });
