// One request to one upstream target: the gateway's credential in place of the client's key, the
// model rewritten to the target's name, the body's bytes for this attempt, and the per-upstream
// timeouts. Failures before the answer's headers are reported, not thrown, so the caller can fall back.
import { EventEmitter } from 'node:events';
import type { Readable } from 'node:stream';
import type { Context } from 'koa';
import type { Dispatcher, FormData } from 'undici';
import { jsonBytesToForward, type JsonObject } from '../http/body.ts';
import type { GatewayState } from '../http/state.ts';
import type { UpstreamRuntime } from './runtime.ts';
import { IMAGE_TOTAL_MS, settingsOf, upstreamPath } from './settings.ts';
import type { Attempt } from './targets.ts';

export interface AttemptRequest {
  /** Path under /v1, e.g. `/chat/completions`. */
  endpoint: string;
  method: string;
  /**
   * JSON body; its `model` is rewritten per target (left alone when the attempt names no model).
   * A body from readJsonBody is sent as the bytes the client wrote, with changed top-level members
   * spliced in: change it only at the top level (see http/body.ts).
   */
  json?: JsonObject;
  /** A multipart body, rebuilt for each attempt (file parts are re-read from the spool each time). */
  form?: (attempt: Attempt) => Promise<FormData>;
  search?: string;
  longRunning?: boolean;
}

export type Outcome = { kind: 'answered'; response: Dispatcher.ResponseData } | { kind: 'failed'; code: string } | { kind: 'aborted' };

/**
 * Aborts the upstream calls of one client request. undici accepts an EventEmitter with `aborted` and
 * `reason` as a signal, so one of these serves every attempt of a request, where an AbortController
 * per attempt joined to the client's by AbortSignal.any cost 2% of a chat request's CPU. The client
 * leaving aborts the call in flight and every later one; an attempt's total timeout aborts its own
 * call only, and the request may go on to another target.
 */
export class UpstreamAbort extends EventEmitter {
  aborted = false;
  /** Read by undici's listener as the abort's cause; null makes it a RequestAbortedError. */
  reason: Error | null = null;
  /** The same event for the answer's relay, which must tell a client that left from a failed upstream. */
  readonly clientGone = new AbortController();
  /** Which attempt is in flight, so that a late timer of an earlier one cannot abort it. */
  attempt = 0;

  /** The client left: the call in flight ends, and no other starts. */
  abortAll(): void {
    if (this.aborted) return;
    this.aborted = true;
    this.clientGone.abort();
    this.emit('abort');
  }

  /** An attempt's total time is up: its call ends (the answer's body too, if it is being relayed). */
  abortAttempt(attempt: number, reason: Error): void {
    if (this.aborted || attempt !== this.attempt) return;
    this.reason = reason;
    this.emit('abort');
    this.reason = null;
  }
}

const TOTAL_TIMEOUT = 'UND_ERR_TOTAL_TIMEOUT';

/** Client headers that change what an upstream does and carry no identity (the Assistants API needs its beta header). */
const FORWARDED_CLIENT_HEADERS = ['openai-beta'];

export async function sendAttempt(ctx: Context, runtime: UpstreamRuntime, attempt: Attempt, request: AttemptRequest, secret: string | null, aborts: UpstreamAbort): Promise<Outcome> {
  const settings = settingsOf(attempt.upstream);
  const headers: Record<string, string> = {
    ...attempt.upstream.spec.headers,
    accept: ctx.get('accept') || 'application/json',
    'x-service-request-id': (ctx.state as GatewayState).requestId,
    'user-agent': 'tollgate-gateway',
  };
  for (const name of FORWARDED_CLIENT_HEADERS) {
    const value = ctx.get(name);
    if (value) headers[name] = value;
  }
  runtime.observer?.headers((ctx.state as GatewayState).exchange, headers);
  if (secret) headers.authorization = `Bearer ${secret}`;
  let body: Buffer | Readable | FormData | undefined;
  if (request.json) {
    body = jsonBytesToForward(request.json, attempt.upstreamModel);
    headers['content-type'] = 'application/json';
  } else if (request.form) {
    // undici sets the multipart content type (with its boundary) and the exact Content-Length itself.
    body = await request.form(attempt);
  }
  const number = ++aborts.attempt;
  let timedOut = false;
  const timer = setTimeout(
    () => {
      timedOut = true;
      aborts.abortAttempt(number, new Error(TOTAL_TIMEOUT));
    },
    request.longRunning ? Math.max(settings.totalMs, IMAGE_TOTAL_MS) : settings.totalMs,
  );
  timer.unref();
  try {
    const response = await runtime.pools.get(attempt.upstream).request({
      path: upstreamPath(settings, request.endpoint, request.search),
      method: request.method as Dispatcher.HttpMethod,
      headers,
      body: body as Dispatcher.DispatchOptions['body'],
      signal: aborts,
      headersTimeout: settings.firstByteMs,
      bodyTimeout: settings.idleMs,
    });
    response.body.once('close', () => clearTimeout(timer));
    return { kind: 'answered', response };
  } catch (error) {
    clearTimeout(timer);
    if (aborts.aborted) return { kind: 'aborted' };
    if (timedOut) return { kind: 'failed', code: 'UND_ERR_HEADERS_TIMEOUT' };
    // Nothing reached the client yet, so every failure before the answer's headers is worth a retry.
    return { kind: 'failed', code: (error as { code?: string }).code ?? 'UND_ERR_SOCKET' };
  }
}
