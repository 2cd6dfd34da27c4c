// Layer: an attempt on an Upstream whose provider needs translating (providers/registry.ts) is sent
// as that provider's request — built by its pure translation from the client's OpenAI body, for the
// target's model — with the provider's credential over the final bytes (an API key header, a minted
// OAuth token, a SigV4 signature). A credential the provider refuses as stale (Vertex's token with a
// 401, Bedrock's expired session with a 403) is fetched afresh and the call tried once more; a request
// with nothing to translate (a file, a batch) is refused before it leaves. Embeddings that the provider takes one input per call (Bedrock's Titan) are sent
// as several calls and answered as one JSON array of their answers, for the translated relay to join.
// Anthropic's Messages API is relayed to the upstreams that speak it (Anthropic, Claude on Vertex AI).
// OpenAI-compatible upstreams pass through untouched.
import { Readable } from 'node:stream';
import type { Dispatcher } from 'undici';
import type { CredentialRef, Upstream } from '@tollgate/crds';
import { ApiError } from '../http/errors.ts';
import { ProviderAuthError, type ReadCredential } from '../providers/auth.ts';
import type { ProviderModule, ProviderRequest } from '../providers/provider.ts';
import { embedsWith, moduleOf, speaksMessages, type ProviderRegistry } from '../providers/registry.ts';
import { onVertex } from '../providers/gemini/vertex-claude.ts';
import type { Credentials } from './credentials.ts';
import type { AttemptRequest, CallUpstream, Layer, Outcome, UpstreamCall } from './call.ts';
import { readErrorText } from './error-body.ts';
import { settingsOf } from './settings.ts';

export function withProviderAuth(registry: ProviderRegistry, credentials: Credentials): Layer {
  const read: ReadCredential = (ref: CredentialRef) => credentials.read(ref);
  return (next) => (call) => {
    const module = moduleOf(registry, call.attempt.upstream);
    if (!module) return next(call);
    return translatedCall(module, read, next, call);
  };
}

async function translatedCall(module: ProviderModule, read: ReadCredential, next: CallUpstream, call: UpstreamCall): Promise<Outcome> {
  const { attempt, request } = call;
  // Only chat, embeddings and Anthropic's Messages are translated: anything else (a file, a batch, a
  // thread sent to the upstream directly) would otherwise be built as a chat request. The routes
  // never send one here; this is the last guard, before anything leaves.
  const translatable = request.operation === 'chat' || (request.operation === 'embeddings' && embedsWith(module, attempt.upstream, attempt.upstreamModel)) || (request.operation === 'messages' && speaksMessages(attempt.upstream, attempt.upstreamModel));
  if (!translatable) {
    throw new ApiError(400, 'unsupported_for_upstream', `The upstream provider '${attempt.upstream.metadata.name}' is ${module.translation.name}, which Tollgate offers chat completions${module.translation.embeddings ? ' and embeddings' : ''} for, not ${request.method} /v1${request.endpoint}.`);
  }
  const json = request.json ?? {};
  const context = { model: attempt.upstreamModel ?? '', upstream: attempt.upstream };
  const requests: ProviderRequest[] =
    request.operation === 'messages'
      ? [relayedMessages(module, request, json, context.model, attempt.upstream)]
      : request.operation === 'embeddings' && module.translation.embeddings
        ? module.translation.embeddings.requests(json, context)
        : [module.translation.chatRequest(json, context, json.stream === true)];
  const secrets = module.auth.secrets?.(attempt.upstream, read) ?? [];
  call.secret = secrets[0] ?? null;
  call.secrets = secrets;
  if (requests.length === 1) return send(module, read, next, call, requests[0], true);
  // Several calls for one answer: each in turn (a provider that takes one input per call is usually
  // rate-limited per call too); the first that is not a 2xx is the answer.
  const answers: unknown[] = [];
  for (const one of requests) {
    const outcome = await send(module, read, next, { ...call, headers: { ...call.headers } }, one, true);
    if (outcome.kind !== 'answered' || outcome.response.statusCode >= 300) return outcome;
    const text = await readErrorText(outcome.response.body, 64 * 1024 * 1024, settingsOf(attempt.upstream).totalMs);
    try {
      answers.push(JSON.parse(text));
    } catch {
      throw new ApiError(502, 'upstream_invalid_response', `The upstream provider '${attempt.upstream.metadata.name}' sent a malformed JSON answer.`);
    }
  }
  return { kind: 'answered', response: jsonAnswer(answers) };
}

async function send(module: ProviderModule, read: ReadCredential, next: CallUpstream, call: UpstreamCall, request: ProviderRequest, mayRetry: boolean): Promise<Outcome> {
  const upstream = call.attempt.upstream;
  const settings = settingsOf(upstream);
  const path = `${settings.basePath.slice(0, -1)}${request.path}`;
  let credential: Record<string, string>;
  try {
    credential = await module.auth.authorize(request, { upstream, url: new URL(path, settings.baseURL) }, read, call.exchange.signal);
  } catch (error) {
    if (call.aborts.aborted) return { kind: 'aborted' };
    if (error instanceof ProviderAuthError) return { kind: 'skipped', why: 'missing_credentials', detail: error.message };
    throw error;
  }
  const headers = call.headers;
  const extra = upstream.spec.headers;
  if (extra) for (const name in extra) headers[name.toLowerCase()] ??= extra[name];
  Object.assign(headers, request.headers, credential);
  call.path = path;
  call.body = request.body;
  // A minted token is a secret too: it must never come back in an error text.
  if (credential.authorization?.startsWith('Bearer ')) call.secrets = [...(call.secrets ?? []), credential.authorization.slice(7)];
  const outcome = await next(call);
  if (!mayRetry || outcome.kind !== 'answered' || !module.auth.refused) return outcome;
  const { response } = outcome;
  const status = response.statusCode;
  if (status !== 401 && status !== 403) return outcome;
  // Refused (Vertex: 401; Bedrock: 403 naming an expired session): one more try when the provider,
  // having read why, says a fresh credential may help. Otherwise the answer goes on, its text kept.
  const text = await readErrorText(response.body, REFUSAL_TEXT_BYTES);
  if (module.auth.refused(upstream, status, { headers: response.headers, text })) {
    for (const name of Object.keys(credential)) delete headers[name];
    return send(module, read, next, call, request, false);
  }
  return { kind: 'answered', response: { ...response, body: Readable.from([Buffer.from(text)]) } as Dispatcher.ResponseData };
}

/** A refusal's text, read whole for the provider to judge (AWS's and Google's are a few hundred bytes). */
const REFUSAL_TEXT_BYTES = 64 * 1024;

/**
 * The Messages API relayed to Anthropic as the client sent it: its bytes (the model renamed when the
 * target names another), its anthropic-version and anthropic-beta; the credential is added after.
 */
function messagesRequest(request: AttemptRequest, json: Record<string, unknown>, model: string): ProviderRequest {
  const body = request.bytes && json.model === model ? request.bytes.toString('utf8') : JSON.stringify({ ...json, model });
  return { path: `${request.endpoint}${request.search ?? ''}`, method: 'POST', headers: { 'content-type': 'application/json', 'anthropic-version': '2023-06-01', ...request.clientHeaders }, body };
}

/** The Messages API request for Anthropic, or for Claude on Vertex AI moved to Vertex's paths and body version. */
function relayedMessages(module: ProviderModule, request: AttemptRequest, json: Record<string, unknown>, model: string, upstream: Upstream): ProviderRequest {
  const relayed = messagesRequest(request, json, model);
  return module.translation.name === 'vertex' ? onVertex(relayed, upstream, model, request.endpoint) : relayed;
}

/** The answers of several calls as one 200 JSON answer: an array, in request order. */
function jsonAnswer(answers: unknown[]): Dispatcher.ResponseData {
  const bytes = Buffer.from(JSON.stringify(answers));
  return {
    statusCode: 200,
    headers: { 'content-type': 'application/json', 'content-length': String(bytes.length) },
    body: Readable.from([bytes]),
    trailers: {},
    opaque: null,
    context: {},
  } as unknown as Dispatcher.ResponseData;
}
