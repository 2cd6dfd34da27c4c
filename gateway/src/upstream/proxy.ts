// Forwards one client request to a model's upstream targets (fallback.ts: in priority/weight order,
// skipping open circuits, falling back before the first byte), then relays the answer that was
// kept (relay.ts) to the response sink. Requests that name no model (files, batches, threads) go to
// the one upstream that holds their ids. The call to each target goes through the layers composed
// in runtime.ts: breaker, credentials and model rewrite, timeouts, dispatch.
import type { Model, Upstream } from '@tollgate/crds';
import type { Exchange } from '../exchange/exchange.ts';
import type { JsonObject } from '../http/body.ts';
import { ApiError } from '../http/errors.ts';
import type { AttemptRequest } from './call.ts';
import { firstAnswer, type Answer, type VetAnswer } from './fallback.ts';
import { readText, relayAnswer, type RelayOptions } from './relay.ts';
import type { UpstreamRuntime } from './runtime.ts';
import type { ResponseSink } from './sink.ts';
import { directAttempt, orderTargets, type Attempt } from './targets.ts';
import { upstreamTimeout } from './upstream-error.ts';
import { embedsWith, moduleOf, speaksMessages, type ProviderRegistry } from '../providers/registry.ts';
import { firstContentVet, relayTranslated, type TranslatedRelayOptions } from './translated-relay.ts';
import { relayAnthropicMessages } from './messages-relay.ts';
import { anthropicRelayVet } from './messages-hold.ts';
import { bodyTimeoutOf } from './with-timeouts.ts';

export type { AttemptRequest } from './call.ts';

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

/** Client headers that change what an upstream does and carry no identity (the Assistants API needs its beta header). */
const FORWARDED_CLIENT_HEADERS = ['openai-beta'];

export async function proxyToUpstream(exchange: Exchange, sink: ResponseSink, runtime: UpstreamRuntime, model: Model, request: ProxyRequest): Promise<void> {
  let attempts = orderTargets(model, exchange.principal!.snapshot);
  if (request.pinnedUpstream) attempts = attempts.filter((a) => a.upstream.metadata.name === request.pinnedUpstream);
  attempts = attemptsThatCan(runtime.providers, attempts, request, model.metadata.name);
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
  const subject = `'${model.metadata.name}'`;
  const translatedAs = (operation: 'chat' | 'embeddings', body: JsonObject): TranslatedRelayOptions => ({ publicModel: model.metadata.name, operation, body, includeUsage: body.stream === true && !stripUsageChunk });
  // A translated chat stream is held until its first content, so that a failure before it falls back
  // (first-content.ts); a model with OpenAI-compatible targets only goes on as it did, without a vet.
  const held = json?.stream === true && request.operation === 'chat' && attempts.some((attempt) => moduleOf(runtime.providers, attempt.upstream));
  // So is the Messages API relayed to Anthropic, whose bytes are held as they came (messages-hold.ts).
  const heldRelay = json?.stream === true && request.operation === 'messages';
  const vet = held ? firstContentVet(exchange, runtime.providers, translatedAs('chat', json), subject) : heldRelay ? anthropicRelayVet(subject) : undefined;
  const answer = await answerOf(exchange, sink, runtime, attempts, request, subject, vet);
  if (!answer) return;
  const module = moduleOf(runtime.providers, answer.attempt.upstream);
  if (module && request.operation === 'messages') return relayAnthropicMessages(exchange, sink, answer);
  if (module && json && request.operation && request.operation !== 'messages') return relayTranslated(exchange, sink, answer, module, translatedAs(request.operation, json));
  await relay(exchange, sink, answer, request, model.metadata.name, stripUsageChunk, runtime.maxSseEventBytes);
}

/**
 * The attempts whose provider can answer the request: an OpenAI-compatible upstream answers anything,
 * a translated one chat completions and (where the provider has them) embeddings. A 400 naming the
 * providers when no target can: the request would fail the same way on every retry.
 */
function attemptsThatCan(providers: ProviderRegistry, attempts: Attempt[], request: ProxyRequest, model: string): Attempt[] {
  let refused: string[] | null = null;
  const able = attempts.filter((attempt) => {
    const module = moduleOf(providers, attempt.upstream);
    if (!module) return true;
    const can =
      request.operation === 'chat' ||
      (request.operation === 'embeddings' && embedsWith(module, attempt.upstream, attempt.upstreamModel)) ||
      (request.operation === 'messages' && speaksMessages(attempt.upstream, attempt.upstreamModel));
    if (!can) (refused ??= []).push(module.translation.name === 'vertex' && speaksMessages(attempt.upstream, attempt.upstreamModel) ? 'Claude on vertex' : module.translation.name);
    return can;
  });
  if (able.length > 0 || !refused) return able;
  const what = request.operation === 'embeddings' ? 'embeddings' : `${request.endpoint.slice(1)}`;
  throw new ApiError(400, 'unsupported_for_model', `The model '${model}' is served by ${[...new Set(refused)].join(' and ')}, which Tollgate does not offer ${what} for. Chat completions work with this model${request.operation === 'embeddings' ? '' : '; see docs/providers.md for what each provider supports'}.`, { param: 'model' });
}

/** A request that names no model, sent to the one upstream that holds what it is about. */
export async function proxyToUpstreamDirect(exchange: Exchange, sink: ResponseSink, runtime: UpstreamRuntime, upstream: Upstream, request: ProxyRequest): Promise<void> {
  const answer = await answerOf(exchange, sink, runtime, [directAttempt(upstream)], request, directSubject(upstream));
  if (answer) await relay(exchange, sink, answer, request, null, false, runtime.maxSseEventBytes);
}

/**
 * One JSON answer from an upstream for the gateway's own use (a page of a listing it filters), with
 * the same credential, timeouts, breaker and error mapping as a relayed request. Null if the client left.
 */
export async function fetchUpstreamJson(exchange: Exchange, sink: ResponseSink, runtime: UpstreamRuntime, upstream: Upstream, request: AttemptRequest): Promise<Record<string, unknown> | null> {
  const answer = await answerOf(exchange, sink, runtime, [directAttempt(upstream)], request, directSubject(upstream));
  if (!answer) return null;
  let text: string;
  try {
    text = await readText(answer.response.body, 16 * 1024 * 1024);
  } catch (error) {
    if (bodyTimeoutOf(error) || exchange.abortReason === 'timeout') throw upstreamTimeout(directSubject(upstream));
    throw error;
  }
  try {
    const parsed = JSON.parse(text);
    if (parsed && typeof parsed === 'object' && !Array.isArray(parsed)) return parsed;
  } catch {}
  throw new ApiError(502, 'upstream_invalid_response', `The upstream provider '${upstream.metadata.name}' sent a malformed JSON answer.`);
}

function answerOf(exchange: Exchange, sink: ResponseSink, runtime: UpstreamRuntime, attempts: Attempt[], request: AttemptRequest, subject: string, vet?: VetAnswer): Promise<Answer | null> {
  const headers: Record<string, string> = {
    accept: sink.requestHeader('accept') || 'application/json',
    'x-service-request-id': exchange.id,
    'user-agent': 'tollgate-gateway',
  };
  for (const name of FORWARDED_CLIENT_HEADERS) {
    const value = sink.requestHeader(name);
    if (value) headers[name] = value;
  }
  return firstAnswer(exchange, runtime.call, runtime.breakers, attempts, request, headers, subject, runtime.providers, vet);
}

function directSubject(upstream: Upstream): string {
  return `'${upstream.metadata.name}' (the upstream holding this account's files, batches and threads)`;
}

function relay(exchange: Exchange, sink: ResponseSink, answer: Answer, request: ProxyRequest, publicModel: string | null, stripUsageChunk: boolean, maxEventBytes: number): Promise<void> {
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
  return relayAnswer(exchange, sink, answer, options);
}
