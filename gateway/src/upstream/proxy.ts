// Forwards one client request to a model's upstream targets: in priority/weight order, skipping
// open circuits, falling back on connection errors, first-byte timeouts, 429 and 5xx, but only
// while nothing has been sent to the client. Once an answer starts, it is relayed as it arrives.
import { PassThrough, Readable, pipeline } from 'node:stream';
import type { Context } from 'koa';
import type { Dispatcher } from 'undici';
import type { Model } from '@tollgate/crds';
import type { JsonObject } from '../http/body.ts';
import { ApiError } from '../http/errors.ts';
import type { GatewayState } from '../http/state.ts';
import { principalOf } from '../routes/model-access.ts';
import type { UpstreamRuntime } from './runtime.ts';
import { IMAGE_TOTAL_MS, settingsOf, upstreamPath } from './settings.ts';
import { orderTargets, type Attempt } from './targets.ts';
import { SseRelay, usageFromChat, type Usage } from './sse-relay.ts';
import { missingCredential, noTargetLeft, relayedClientError, scrub, upstreamAuthFailed, upstreamTimeout } from './upstream-error.ts';

export interface ProxyRequest {
  /** Path under /v1, e.g. `/chat/completions`. */
  endpoint: string;
  method: string;
  /** JSON body; its `model` is rewritten per target. */
  json?: JsonObject;
  /** A non-JSON body (multipart), rebuilt for each attempt. */
  body?: (attempt: Attempt) => { stream: Readable; contentType: string };
  search?: string;
  /** Which SSE dialect to expect when the answer is an event stream. */
  streamKind?: 'chat' | 'responses' | 'other';
  longRunning?: boolean;
  /** Restricts the attempts to one upstream (ids that only that upstream knows). */
  pinnedUpstream?: string;
  /** Called with the upstream that answered a 2xx JSON answer, before it is relayed. */
  onAnswered?: (upstream: string, json: unknown) => void;
  /** Called with the id of a streamed Responses answer, from its response.created event. */
  onResponseId?: (upstream: string, id: string) => void;
}

interface AttemptRecord {
  upstream: string;
  status?: number;
  error?: string;
  ms: number;
}

const TIMEOUT_ERRORS = new Set(['UND_ERR_CONNECT_TIMEOUT', 'UND_ERR_HEADERS_TIMEOUT']);
const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'transfer-encoding', 'te', 'trailer', 'upgrade', 'proxy-authenticate', 'proxy-authorization', 'content-length', 'content-encoding']);
const MAX_JSON_ANSWER = 64 * 1024 * 1024;

export async function proxyToUpstream(ctx: Context, runtime: UpstreamRuntime, model: Model, request: ProxyRequest): Promise<void> {
  const state = ctx.state as GatewayState;
  const snapshot = principalOf(ctx).snapshot;
  let attempts = orderTargets(model, snapshot);
  if (request.pinnedUpstream) attempts = attempts.filter((a) => a.upstream.metadata.name === request.pinnedUpstream);
  const records: AttemptRecord[] = [];
  state.upstream = { attempts: records };
  const clientGone = new AbortController();
  ctx.res.once('close', () => {
    if (!ctx.res.writableFinished) clientGone.abort();
  });

  // Chat streams: ask for the usage chunk for accounting, and hide it again if the client did not.
  const json = request.json;
  let stripUsageChunk = false;
  if (json && request.streamKind === 'chat' && json.stream === true) {
    const options = (json.stream_options ?? {}) as JsonObject;
    if (options.include_usage !== true) {
      stripUsageChunk = true;
      json.stream_options = { ...options, include_usage: true };
    }
  }

  let lastFailure: ApiError | null = null;
  let skipped = 0;
  for (const attempt of attempts) {
    const name = attempt.upstream.metadata.name;
    if (clientGone.signal.aborted) return;
    if (!runtime.breakers.tryAcquire(name)) {
      skipped++;
      continue;
    }
    const secret = runtime.credentials.for(attempt.upstream);
    if (secret === undefined) {
      runtime.breakers.release(name);
      lastFailure = missingCredential(name);
      records.push({ upstream: name, error: 'missing credentials', ms: 0 });
      continue;
    }
    const started = performance.now();
    const outcome = await sendAttempt(ctx, runtime, attempt, request, secret, clientGone.signal);
    const record: AttemptRecord = { upstream: name, ms: Math.round(performance.now() - started) };
    records.push(record);
    if (outcome.kind === 'aborted') {
      runtime.breakers.release(name);
      record.error = 'client closed';
      return;
    }
    if (outcome.kind === 'failed') {
      runtime.breakers.failure(name);
      record.error = outcome.code;
      lastFailure = TIMEOUT_ERRORS.has(outcome.code) ? upstreamTimeout(model.metadata.name) : noTargetLeft(model.metadata.name, 1, `last error: ${outcome.code} from '${name}'`);
      continue;
    }
    const { response } = outcome;
    record.status = response.statusCode;
    if (response.statusCode === 429 || response.statusCode >= 500) {
      runtime.breakers.failure(name);
      const text = await readText(response.body, 64 * 1024);
      lastFailure =
        response.statusCode === 429
          ? relayedClientError(429, text, secret, retryHints(response.headers))
          : noTargetLeft(model.metadata.name, 1, `'${name}' answered ${response.statusCode}: ${scrub(messageOf(text), secret)}`);
      continue;
    }
    if (response.statusCode === 401 || response.statusCode === 403) {
      // Our credential is wrong: say so, and do not let the breaker hide a configuration error.
      await readText(response.body, 64 * 1024);
      runtime.breakers.release(name);
      throw upstreamAuthFailed(name);
    }
    runtime.breakers.success(name);
    if (response.statusCode >= 400) throw relayedClientError(response.statusCode, await readText(response.body, 1024 * 1024), secret);
    state.upstream.target = name;
    await relayAnswer(ctx, response, attempt, request, stripUsageChunk, secret, clientGone);
    return;
  }
  if (lastFailure) throw lastFailure;
  const wait = Math.ceil(runtime.breakers.retryAfterMs(attempts.map((a) => a.upstream.metadata.name)) / 1000);
  throw noTargetLeft(model.metadata.name, wait, skipped > 0 ? 'every target is cooling down after failures' : 'the model has no usable target');
}

type Outcome = { kind: 'answered'; response: Dispatcher.ResponseData } | { kind: 'failed'; code: string } | { kind: 'aborted' };

async function sendAttempt(ctx: Context, runtime: UpstreamRuntime, attempt: Attempt, request: ProxyRequest, secret: string | null, clientGone: AbortSignal): Promise<Outcome> {
  const settings = settingsOf(attempt.upstream);
  const headers: Record<string, string> = {
    ...(attempt.upstream.spec.headers ?? {}),
    accept: ctx.get('accept') || 'application/json',
    'x-service-request-id': (ctx.state as GatewayState).requestId,
    'user-agent': 'tollgate-gateway',
  };
  if (secret) headers.authorization = `Bearer ${secret}`;
  let body: string | Readable | undefined;
  if (request.json) {
    body = JSON.stringify({ ...request.json, model: attempt.upstreamModel });
    headers['content-type'] = 'application/json';
  } else if (request.body) {
    const built = request.body(attempt);
    body = built.stream;
    headers['content-type'] = built.contentType;
  }
  const total = new AbortController();
  const timer = setTimeout(() => total.abort(new Error('UND_ERR_TOTAL_TIMEOUT')), request.longRunning ? Math.max(settings.totalMs, IMAGE_TOTAL_MS) : settings.totalMs);
  timer.unref();
  const signal = AbortSignal.any([clientGone, total.signal]);
  try {
    const response = await runtime.pools.get(attempt.upstream).request({
      path: upstreamPath(settings, request.endpoint, request.search),
      method: request.method as Dispatcher.HttpMethod,
      headers,
      body,
      signal,
      headersTimeout: settings.firstByteMs,
      bodyTimeout: settings.idleMs,
    });
    response.body.once('close', () => clearTimeout(timer));
    return { kind: 'answered', response };
  } catch (error) {
    clearTimeout(timer);
    if (clientGone.aborted) return { kind: 'aborted' };
    if (total.signal.aborted) return { kind: 'failed', code: 'UND_ERR_HEADERS_TIMEOUT' };
    // Nothing reached the client yet, so every failure before the answer's headers is worth a retry.
    return { kind: 'failed', code: (error as { code?: string }).code ?? 'UND_ERR_SOCKET' };
  }
}

async function relayAnswer(ctx: Context, response: Dispatcher.ResponseData, attempt: Attempt, request: ProxyRequest, stripUsageChunk: boolean, secret: string | null, clientGone: AbortController): Promise<void> {
  const state = ctx.state as GatewayState;
  const contentType = String(response.headers['content-type'] ?? 'application/octet-stream');
  const publicModel = (request.json?.model as string | undefined) ?? attempt.upstreamModel;
  ctx.status = response.statusCode;

  if (contentType.startsWith('text/event-stream')) {
    ctx.set('Cache-Control', 'no-cache');
    ctx.set('X-Accel-Buffering', 'no');
    ctx.type = contentType;
    ctx.req.socket.setNoDelay(true);
    const relay = new SseRelay({
      kind: request.streamKind ?? 'other',
      publicModel,
      upstreamModel: attempt.upstreamModel,
      stripUsageChunk,
      onUsage: (usage) => (state.usage = usage),
      onResponseId: (id) => request.onResponseId?.(attempt.upstream.metadata.name, id),
    });
    const out = new PassThrough();
    ctx.body = out;
    // Headers go out now: the client sees the stream start without waiting for the first event.
    ctx.flushHeaders?.();
    pipeline(response.body, relay, (error) => {
      if (error && !clientGone.signal.aborted) {
        const code = (error as { code?: string }).code === 'UND_ERR_BODY_TIMEOUT' ? 'upstream_idle_timeout' : 'upstream_stream_error';
        out.end(`data: ${JSON.stringify({ error: { message: 'The upstream stream failed before it completed; the answer is incomplete. Retry the request.', type: 'server_error', param: null, code } })}\n\n`);
        (ctx.state as GatewayState).streamError = code;
      }
    }).pipe(out);
    return;
  }

  if (contentType.includes('json')) {
    const text = await readText(response.body, MAX_JSON_ANSWER);
    let parsed: Record<string, unknown> | null = null;
    try {
      parsed = JSON.parse(text);
    } catch {
      throw new ApiError(502, 'upstream_invalid_response', `The upstream provider '${attempt.upstream.metadata.name}' sent a malformed JSON answer.`);
    }
    const usage = usageFromChat(parsed?.usage);
    if (usage) state.usage = usage;
    request.onAnswered?.(attempt.upstream.metadata.name, parsed);
    if (parsed && typeof parsed.model === 'string' && publicModel !== attempt.upstreamModel) {
      parsed.model = publicModel;
      ctx.body = parsed;
    } else {
      ctx.type = 'application/json';
      ctx.body = scrub(text, secret);
    }
    return;
  }

  // Binary answers (audio, file content): streamed through with their own type and length.
  for (const [name, value] of Object.entries(response.headers)) {
    if (!HOP_BY_HOP.has(name) && (name === 'content-type' || name === 'content-disposition' || name.startsWith('openai-')) && value !== undefined) ctx.set(name, String(value));
  }
  if (response.headers['content-length']) ctx.length = Number(response.headers['content-length']);
  ctx.body = response.body;
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

async function readText(body: Readable, limit: number): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > limit) {
      body.destroy();
      throw new ApiError(502, 'upstream_invalid_response', 'The upstream answer was larger than the gateway accepts.');
    }
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString('utf8');
}

export type { Usage };
