// Forwards one client request to a model's upstream targets: in priority/weight order, skipping
// open circuits, falling back on connection errors, first-byte timeouts, 429 and 5xx, but only
// while nothing has been sent to the client. Once an answer starts, it is relayed as it arrives.
// Requests that name no model (files, batches, threads) go to the one upstream that holds their ids.
import type { Context } from 'koa';
import type { Dispatcher } from 'undici';
import type { Model, Upstream } from '@tollgate/crds';
import type { JsonObject } from '../http/body.ts';
import { ApiError } from '../http/errors.ts';
import type { Exchange, UpstreamAttempt } from '../exchange/exchange.ts';
import type { GatewayState } from '../http/state.ts';
import { sendAttempt, UpstreamAbort, type AttemptRequest } from './attempt.ts';
import { readText, relayAnswer, type RelayOptions } from './relay.ts';
import type { UpstreamRuntime } from './runtime.ts';
import { settingsOf } from './settings.ts';
import { directAttempt, orderTargets, type Attempt } from './targets.ts';
import { sinceAttempt } from '../exchange/exchange.ts';
import type { Usage } from './sse-relay.ts';
import { missingCredential, noTargetLeft, relayedClientError, scrub, upstreamAuthFailed, upstreamTimeout } from './upstream-error.ts';

export interface ProxyRequest extends AttemptRequest {
  /** Which SSE dialect to expect when the answer is an event stream. */
  streamKind?: 'chat' | 'responses' | 'other';
  /** Restricts the attempts to one upstream (ids that only that upstream knows). */
  pinnedUpstream?: string;
  /** Relay the answer's bytes untouched whatever their content type (file content). */
  raw?: boolean;
  /** Called with the upstream that answered a 2xx JSON answer, before it is relayed. */
  onAnswered?: (upstream: string, json: unknown) => void;
  /** Called with the id of a streamed Responses answer, from its response.created event. */
  onResponseId?: (upstream: string, id: string) => void;
  /** Sees the data of each event of a relayed stream. */
  onEventData?: (upstream: string, data: string) => void;
}

interface Answer {
  response: Dispatcher.ResponseData;
  attempt: Attempt;
  secret: string | null;
  clientGone: AbortController;
  exchange: Exchange;
  record: UpstreamAttempt;
}

const TIMEOUT_ERRORS = new Set(['UND_ERR_CONNECT_TIMEOUT', 'UND_ERR_HEADERS_TIMEOUT']);

export async function proxyToUpstream(ctx: Context, runtime: UpstreamRuntime, model: Model, request: ProxyRequest): Promise<void> {
  let attempts = orderTargets(model, exchangeOfContext(ctx).principal!.snapshot);
  if (request.pinnedUpstream) attempts = attempts.filter((a) => a.upstream.metadata.name === request.pinnedUpstream);
  // Chat streams: ask for the usage chunk for accounting, and hide it again if the client did not.
  // The top-level value is replaced, never changed in place: the body is forwarded as its bytes
  // with changed top-level members spliced in (http/body.ts).
  const json = request.json;
  let stripUsageChunk = false;
  if (json && request.streamKind === 'chat' && json.stream === true) {
    const options = (json.stream_options ?? {}) as JsonObject;
    if (options.include_usage !== true) {
      stripUsageChunk = true;
      json.stream_options = { ...options, include_usage: true };
    }
  }
  const answer = await firstAnswer(ctx, runtime, attempts, request, `'${model.metadata.name}'`);
  if (answer) await relay(ctx, answer, request, model.metadata.name, stripUsageChunk, runtime.maxSseEventBytes);
}

/** A request that names no model, sent to the one upstream that holds what it is about. */
export async function proxyToUpstreamDirect(ctx: Context, runtime: UpstreamRuntime, upstream: Upstream, request: ProxyRequest): Promise<void> {
  const answer = await firstAnswer(ctx, runtime, [directAttempt(upstream)], request, directSubject(upstream));
  if (answer) await relay(ctx, answer, request, null, false, runtime.maxSseEventBytes);
}

/**
 * One JSON answer from an upstream for the gateway's own use (a page of a listing it filters), with
 * the same credential, timeouts, breaker and error mapping as a relayed request. Null if the client left.
 */
export async function fetchUpstreamJson(ctx: Context, runtime: UpstreamRuntime, upstream: Upstream, request: AttemptRequest): Promise<Record<string, unknown> | null> {
  const answer = await firstAnswer(ctx, runtime, [directAttempt(upstream)], request, directSubject(upstream));
  if (!answer) return null;
  const text = await readText(answer.response.body, 16 * 1024 * 1024);
  try {
    const parsed = JSON.parse(text);
    if (parsed && typeof parsed === 'object' && !Array.isArray(parsed)) return parsed;
  } catch {}
  throw new ApiError(502, 'upstream_invalid_response', `The upstream provider '${upstream.metadata.name}' sent a malformed JSON answer.`);
}

function directSubject(upstream: Upstream): string {
  return `'${upstream.metadata.name}' (the upstream holding this account's files, batches and threads)`;
}

function relay(ctx: Context, answer: Answer, request: ProxyRequest, publicModel: string | null, stripUsageChunk: boolean, maxEventBytes: number): Promise<void> {
  const options: RelayOptions = {
    publicModel,
    streamKind: request.streamKind,
    stripUsageChunk,
    raw: request.raw,
    onAnswered: request.onAnswered,
    onResponseId: request.onResponseId,
    onEventData: request.onEventData,
    maxEventBytes,
  };
  return relayAnswer(ctx, answer.exchange, answer.record, answer.response, answer.attempt, options, answer.secret, answer.clientGone);
}

/** Tries the attempts in order until one answers with something worth relaying; throws the client's error otherwise. */
async function firstAnswer(ctx: Context, runtime: UpstreamRuntime, attempts: Attempt[], request: AttemptRequest, subject: string): Promise<Answer | null> {
  const exchange = exchangeOfContext(ctx);
  const aborts = abortsOf(exchange);

  let lastFailure: ApiError | null = null;
  let skipped = 0;
  for (const attempt of attempts) {
    const name = attempt.upstream.metadata.name;
    if (aborts.aborted) return null;
    if (!runtime.breakers.tryAcquire(name)) {
      skipped++;
      continue;
    }
    const settings = settingsOf(attempt.upstream);
    const record = exchange.startAttempt(name, attempt.upstreamModel, { address: settings.baseURL.hostname, port: portOf(settings.baseURL) });
    const secret = runtime.credentials.for(attempt.upstream);
    if (secret === undefined) {
      runtime.breakers.release(name);
      lastFailure = missingCredential(name);
      settle(record, 'refused', 'missing credentials');
      continue;
    }
    const outcome = await sendAttempt(ctx, runtime, attempt, request, secret, aborts);
    record.headersMs = sinceAttempt(record);
    if (outcome.kind === 'aborted') {
      runtime.breakers.release(name);
      settle(record, 'aborted', exchange.abortReason ?? 'aborted');
      return null;
    }
    if (outcome.kind === 'failed') {
      runtime.breakers.failure(name);
      settle(record, 'failed', outcome.code);
      lastFailure = TIMEOUT_ERRORS.has(outcome.code) ? upstreamTimeout(subject) : noTargetLeft(subject, 1, `last error: ${outcome.code} from '${name}'`);
      continue;
    }
    const { response } = outcome;
    record.status = response.statusCode;
    if (response.statusCode === 429 || response.statusCode >= 500) {
      runtime.breakers.failure(name);
      settle(record, 'failed', `upstream_${response.statusCode}`);
      const text = await readText(response.body, 64 * 1024);
      lastFailure =
        response.statusCode === 429
          ? relayedClientError(429, text, secret, retryHints(response.headers))
          : noTargetLeft(subject, 1, `'${name}' answered ${response.statusCode}: ${scrub(messageOf(text), secret)}`);
      continue;
    }
    if (response.statusCode === 401 || response.statusCode === 403) {
      // Our credential is wrong: say so, and do not let the breaker hide a configuration error.
      await readText(response.body, 64 * 1024);
      runtime.breakers.release(name);
      throw upstreamAuthFailed(name);
    }
    runtime.breakers.success(name);
    watchAnswer(exchange, record, response);
    if (response.statusCode >= 400) throw relayedClientError(response.statusCode, await readText(response.body, 1024 * 1024), secret);
    exchange.upstream = name;
    exchange.modelAnswered = attempt.upstreamModel;
    return { response, attempt, secret, clientGone: aborts.clientGone, exchange, record };
  }
  if (lastFailure) throw lastFailure;
  const wait = Math.ceil(runtime.breakers.retryAfterMs(attempts.map((a) => a.upstream.metadata.name)) / 1000);
  throw noTargetLeft(subject, wait, skipped > 0 ? 'every target is cooling down after failures' : 'the model has no usable target');
}

const abortsByExchange = new WeakMap<Exchange, UpstreamAbort>();

/** Aborts the request's upstream calls when its exchange is aborted (client gone, shutdown); one per exchange, however many upstream calls it takes. */
function abortsOf(exchange: Exchange): UpstreamAbort {
  let aborts = abortsByExchange.get(exchange);
  if (!aborts) {
    const created = new UpstreamAbort();
    const signal = exchange.signal;
    if (signal.aborted) created.abortAll();
    else signal.addEventListener('abort', () => created.abortAll(), { once: true });
    abortsByExchange.set(exchange, created);
    aborts = created;
  }
  return aborts;
}

function exchangeOfContext(ctx: Context): Exchange {
  return (ctx.state as GatewayState).exchange;
}

function settle(record: UpstreamAttempt, outcome: UpstreamAttempt['outcome'], error: string | null): void {
  record.outcome = outcome;
  record.error = error;
  record.durationMs ??= sinceAttempt(record);
}

/** The kept answer's timings: its body's end (or cut) closes the attempt. */
function watchAnswer(exchange: Exchange, record: UpstreamAttempt, response: Dispatcher.ResponseData): void {
  response.body.once('close', () => {
    if (record.outcome !== 'pending') return;
    settle(record, exchange.aborted ? 'aborted' : 'answered', exchange.aborted ? exchange.abortReason : null);
  });
}

function portOf(url: URL): number {
  return url.port ? Number(url.port) : url.protocol === 'https:' ? 443 : 80;
}

function retryHints(headers: Dispatcher.ResponseData['headers']): Record<string, string> {
  const hints: Record<string, string> = {};
  for (const name of ['retry-after', 'retry-after-ms', 'x-ratelimit-reset-requests', 'x-ratelimit-reset-tokens']) {
    const value = headers[name];
    if (typeof value === 'string') hints[name] = value;
  }
  return hints;
}

function messageOf(text: string): string {
  try {
    const parsed = JSON.parse(text);
    const message = parsed?.error?.message ?? parsed?.message;
    if (typeof message === 'string') return message.slice(0, 300);
  } catch {}
  return text.slice(0, 300);
}

export type { Usage };
