// One request to one upstream target: the gateway's credential in place of the client's key, the
// model rewritten to the target's name, the body rebuilt for this attempt, and the per-upstream
// timeouts. Failures before the answer's headers are reported, not thrown, so the caller can fall back.
import type { Readable } from 'node:stream';
import type { Context } from 'koa';
import type { Dispatcher, FormData } from 'undici';
import type { JsonObject } from '../http/body.ts';
import type { GatewayState } from '../http/state.ts';
import type { UpstreamRuntime } from './runtime.ts';
import { IMAGE_TOTAL_MS, settingsOf, upstreamPath } from './settings.ts';
import type { Attempt } from './targets.ts';

export interface AttemptRequest {
  /** Path under /v1, e.g. `/chat/completions`. */
  endpoint: string;
  method: string;
  /** JSON body; its `model` is rewritten per target (left alone when the attempt names no model). */
  json?: JsonObject;
  /** A multipart body, rebuilt for each attempt (file parts are re-read from the spool each time). */
  form?: (attempt: Attempt) => Promise<FormData>;
  search?: string;
  longRunning?: boolean;
}

export type Outcome = { kind: 'answered'; response: Dispatcher.ResponseData } | { kind: 'failed'; code: string } | { kind: 'aborted' };

/** Client headers that change what an upstream does and carry no identity (the Assistants API needs its beta header). */
const FORWARDED_CLIENT_HEADERS = ['openai-beta'];

export async function sendAttempt(ctx: Context, runtime: UpstreamRuntime, attempt: Attempt, request: AttemptRequest, secret: string | null, clientGone: AbortSignal): Promise<Outcome> {
  const settings = settingsOf(attempt.upstream);
  const headers: Record<string, string> = {
    ...(attempt.upstream.spec.headers ?? {}),
    accept: ctx.get('accept') || 'application/json',
    'x-service-request-id': (ctx.state as GatewayState).requestId,
    'user-agent': 'tollgate-gateway',
  };
  for (const name of FORWARDED_CLIENT_HEADERS) if (ctx.get(name)) headers[name] = ctx.get(name);
  if (secret) headers.authorization = `Bearer ${secret}`;
  let body: string | Readable | FormData | undefined;
  if (request.json) {
    body = JSON.stringify(attempt.upstreamModel === null ? request.json : { ...request.json, model: attempt.upstreamModel });
    headers['content-type'] = 'application/json';
  } else if (request.form) {
    // undici sets the multipart content type (with its boundary) and the exact Content-Length itself.
    body = await request.form(attempt);
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
      body: body as Dispatcher.DispatchOptions['body'],
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
