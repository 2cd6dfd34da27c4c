// The Anthropic Messages API (POST /v1/messages, /v1/messages/count_tokens), for Claude Code and the
// Anthropic SDKs, on every model: the request is turned into an OpenAI chat request
// (dialects/anthropic/request.ts) and answered by the model's backend like any chat completion —
// same keys, catalogue, limits and reservation, usage, metrics and access line — then the answer is
// turned back into the Messages API's: a JSON answer after the backend has set it, a stream as the
// backend writes it (routes/dialect-stream.ts), message_start as soon as its headers go out and a ping
// during long silences (TOLLGATE_STREAM_PING_MS). A model served only by Anthropic gets the request
// relayed as it came instead (upstream/messages-relay.ts), and so does one served by Claude on Vertex
// AI, only moved to Vertex's paths (providers/gemini/vertex-claude.ts). Errors are in Anthropic's
// envelope (http/error-handler.ts).
import type Router from '@koa/router';
import type { Context } from 'koa';
import type { GatewayDeps } from '../deps.ts';
import { jsonBytesToForward, readJsonBody, readWholeJson, type JsonObject } from '../http/body.ts';
import { OPENAI_MAX_STRING_LENGTH } from '../http/string-length.ts';
import { koaSink } from '../http/koa-sink.ts';
import { proxyToUpstream } from '../upstream/proxy.ts';
import { speaksMessages } from '../providers/registry.ts';
import { invalidType, missingParam } from '../http/errors.ts';
import { estimateTokens } from '../limits/estimate.ts';
import { chatToMessage, type StopSequences } from '../dialects/anthropic/response.ts';
import { messagesToChat } from '../dialects/anthropic/request.ts';
import { hasUrlSources } from '../dialects/anthropic/url-sources.ts';
import type { GatewayState } from '../http/state.ts';
import type { Backends } from './backends/backend.ts';
import { translateChatStream } from './dialect-stream.ts';
import { ChatToMessagesStream } from '../dialects/anthropic/stream.ts';
import { captureInput, exchangeOf, principalOf, reserveFor, resolveModel, type ResolvedModel } from './model-access.ts';

/**
 * A text string longer than OpenAI's limit is refused before it is read whole (400
 * invalid_request_error): at four characters a token it is past every model's context, Claude's
 * included, and flattening it on the event loop would hold every other request (string-length.ts).
 * Base64 media (`source.data`) is bounded by the body's size alone.
 */
const WHOLE = { maxStringLength: OPENAI_MAX_STRING_LENGTH };

export function registerMessagesRoutes(router: Router, deps: GatewayDeps, backends: Backends): void {
  router.post('/v1/messages', async (ctx) => {
    const received = await readJsonBody(ctx, deps.config.maxBodyBytes);
    const resolved = resolveModel(ctx, received.model, 'model', 'messages');
    // Claude's own clients talking to Claude: relayed as they came, bytes both ways.
    const relayable = anthropicOnly(ctx, resolved) ? jsonBytesToForward(received, null) : null;
    // Otherwise the request is rewritten below its top level: read whole.
    const body = await readWholeJson(received, WHOLE);
    // Claude on Vertex takes no media URL: such a request is translated, and the gateway fetches the media.
    const relayed = relayable && hasUrlSources(body) && someTargetOn(ctx, resolved, 'vertex') ? null : relayable;
    const { chat, stream } = messagesToChat(body, relayed !== null);
    captureInput(ctx, chat);
    await reserveFor(ctx, deps, chat, 'chat');
    if (relayed && resolved.kind === 'upstream') return relayToAnthropic(ctx, deps, resolved, body, relayed, '/v1/messages');
    const requestId = (ctx.state as GatewayState).requestId;
    const model = String(chat.model);
    // Chat's finish_reason `stop` does not say a stop sequence ended the turn: a backend that knows tells the exchange.
    const exchange = exchangeOf(ctx);
    const stops: StopSequences = { requested: Array.isArray(chat.stop) ? (chat.stop as string[]) : [], hit: () => exchange.stopSequence };
    if (stream) {
      const translator = new ChatToMessagesStream(model, requestId, estimateTokens(chat, 'chat', 0).input, undefined, stops);
      // During long silences (a model thinking) a ping keeps proxies and clients from giving up, as Anthropic's own.
      translateChatStream(ctx, translator, { keepAlive: { event: () => translator.keepAlive(), everyMs: deps.config.streamPingMs } });
    }
    await backends.of(resolved).chatCompletions(ctx, resolved, chat);
    if (!stream) answerAsMessage(ctx, model, requestId, stops);
  });

  // Counted as the gateway counts a request's input for its limits: the same figure a reservation uses.
  router.post('/v1/messages/count_tokens', async (ctx) => {
    const received = await readJsonBody(ctx, deps.config.maxBodyBytes);
    if (received.messages === undefined) throw missingParam('messages');
    const resolved = resolveModel(ctx, received.model, 'model', 'messages.count_tokens');
    const relayed = anthropicOnly(ctx, resolved) ? jsonBytesToForward(received, null) : null;
    // Checked once read whole: a large body's members are still in the parser worker until then.
    const body = await readWholeJson(received, WHOLE);
    if (!Array.isArray(body.messages)) throw invalidType('messages', 'an array');
    if (relayed && resolved.kind === 'upstream') return relayToAnthropic(ctx, deps, resolved, body, relayed, '/v1/messages/count_tokens');
    // count_tokens takes no max_tokens; the translation wants one.
    const { chat } = messagesToChat({ ...body, max_tokens: 1 });
    ctx.body = { input_tokens: estimateTokens(chat, 'chat', 0).input };
  });
}

/** True when every target of the model speaks the Messages API (Anthropic, Claude on Vertex AI): the request needs no translation. */
function anthropicOnly(ctx: Context, resolved: ResolvedModel): boolean {
  if (resolved.kind !== 'upstream') return false;
  const upstreams = principalOf(ctx).snapshot.upstreams;
  const model = resolved.model;
  return model.spec.targets.every((target) => {
    const upstream = upstreams.get(target.upstream);
    return upstream !== undefined && speaksMessages(upstream, target.model ?? model.metadata.name);
  });
}

function someTargetOn(ctx: Context, resolved: ResolvedModel, provider: string): boolean {
  if (resolved.kind !== 'upstream') return false;
  const upstreams = principalOf(ctx).snapshot.upstreams;
  return resolved.model.spec.targets.some((target) => upstreams.get(target.upstream)?.spec.provider === provider);
}

/** The headers of Claude's clients that change what Anthropic does; the key is never among them. */
const RELAYED_HEADERS = ['anthropic-version', 'anthropic-beta'];

function relayToAnthropic(ctx: Context, deps: GatewayDeps, resolved: Extract<ResolvedModel, { kind: 'upstream' }>, body: JsonObject, bytes: Buffer, endpoint: string): Promise<void> {
  const clientHeaders: Record<string, string> = {};
  for (const name of RELAYED_HEADERS) if (ctx.get(name)) clientHeaders[name] = ctx.get(name);
  return proxyToUpstream(exchangeOf(ctx), koaSink(ctx), deps.upstreams, resolved.model, { endpoint, method: 'POST', json: body, bytes, operation: 'messages', clientHeaders, search: ctx.querystring ? `?${ctx.querystring}` : '' });
}

/** The backend's chat completion (an object from service-test, JSON bytes from an upstream) as a Messages answer. */
function answerAsMessage(ctx: Context, model: string, requestId: string, stops: StopSequences): void {
  if (ctx.respond === false || ctx.status >= 300) return;
  const body = ctx.body;
  const completion = Buffer.isBuffer(body) ? JSON.parse(body.toString('utf8')) : body;
  ctx.body = chatToMessage(completion as Record<string, unknown>, model, requestId, stops);
  ctx.type = 'application/json';
}
