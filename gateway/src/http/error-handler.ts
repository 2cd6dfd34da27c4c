// The single place where a thrown error becomes an HTTP answer. Koa's own default is text/plain and
// may include internals; clients here need OpenAI's JSON error body whatever went wrong.
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Context } from 'koa';
import type { Logger } from 'pino';
import { ApiError } from './errors.ts';
import type { GatewayState } from './state.ts';
import { anthropicError } from '../dialects/anthropic/errors.ts';

/**
 * True when the request is an Anthropic client's, answered in Anthropic's error envelope: the Messages
 * API's paths, and the model list when asked with `anthropic-version` (Claude Code's model discovery),
 * whose answer is Anthropic's too.
 */
export function speaksAnthropic(path: string, anthropicVersion: string): boolean {
  if (path === '/v1/messages' || path.startsWith('/v1/messages/')) return true;
  return anthropicVersion !== '' && (path === '/v1/models' || path.startsWith('/v1/models/'));
}

/** Maps the errors that libraries throw (router, body readers) onto ApiError. */
export function toApiError(error: unknown, method: string, path: string): ApiError {
  if (error instanceof ApiError) return error;
  const e = error as { status?: number; statusCode?: number; type?: string; expose?: boolean; message?: string; headers?: Record<string, string> };
  const status = e.status ?? e.statusCode;
  if (status === 405) return new ApiError(405, 'method_not_allowed', `Method ${method} is not allowed for ${path}.`, { headers: e.headers });
  if (status === 501) return new ApiError(405, 'method_not_allowed', `Method ${method} is not supported.`);
  if (status === 413 || e.type === 'entity.too.large') return new ApiError(413, 'request_too_large', 'Request body is too large.');
  if (e.type === 'request.aborted') return new ApiError(400, 'request_aborted', 'The client closed the request before the body was complete.');
  if (status && status >= 400 && status < 500 && e.expose) return new ApiError(status, 'invalid_request', e.message ?? 'Invalid request.');
  return new ApiError(500, 'internal_error', 'The server had an error while processing your request. Retry, and quote the X-Service-Request-Id if it persists.');
}

const LINGER_MS = 1000;
const LINGER_BYTES = 8 * 1024 * 1024;

/** A body refused only for want of room (503) is within the size limit: it is discarded whole, so the client reads the 503 and its Retry-After. */
const BUSY_LINGER_MS = 15_000;

/**
 * After an error answered before the body was read (a 413, say), the client may still be sending.
 * Closing at once makes it fail with EPIPE before it reads our answer; reading on forever defeats the
 * limit. So, like nginx's lingering close, discard what arrives for a moment (bounded in time and
 * bytes), then drop the connection.
 */
function lingerThenClose(req: IncomingMessage, res: ServerResponse, ms = LINGER_MS, bytes = LINGER_BYTES): void {
  // No `Connection: close` here: Node would destroy the socket as soon as the answer is written.
  res.once('finish', () => {
    if (req.complete) return;
    let discarded = 0;
    // The socket may already be gone (the client gave up first); there is nothing left to close then.
    const close = () => req.socket?.destroy();
    const timer = setTimeout(close, ms);
    timer.unref();
    req.on('data', (chunk: Buffer) => {
      discarded += chunk.length;
      if (discarded > bytes) close();
    });
    req.once('end', () => clearTimeout(timer));
    req.once('close', () => clearTimeout(timer));
    req.resume();
  });
}

/** Answers with the error's OpenAI body, or, when a stream already started, drops the connection. */
export function answerWithError(ctx: Context & { state: GatewayState }, error: unknown, log: Logger): void {
  const apiError = toApiError(error, ctx.method, ctx.path);
  ctx.state.exchange.error = { code: apiError.code, reason: apiError.reason };
  // A clock ran out (the body went idle, the upstream took too long): the request stops for that reason.
  if (apiError.timedOut) ctx.state.exchange.abort('timeout');
  if (apiError.status >= 500 && apiError.code !== 'server_busy') log.error({ err: error, requestId: ctx.state.requestId }, 'request failed');
  if (ctx.headerSent || !ctx.writable) {
    // A stream already started: its own writer reports errors in-band; nothing more can be sent.
    ctx.res.destroy();
    return;
  }
  ctx.set(apiError.headers);
  ctx.type = 'application/json';
  if (speaksAnthropic(ctx.path, ctx.get('anthropic-version'))) {
    // Anthropic's clients (Claude Code, the Anthropic SDKs) read Anthropic's envelope and statuses.
    const answer = anthropicError(apiError, ctx.state.requestId);
    ctx.status = answer.status;
    ctx.body = answer.body;
  } else {
    ctx.status = apiError.status;
    ctx.body = apiError.toBody();
  }
  // Refused before its body was all read (too large, too slow, no room, a bad form): the rest of it
  // is not wanted, and nobody would read it.
  if (ctx.req.complete) return;
  if (apiError.code === 'server_busy') lingerThenClose(ctx.req, ctx.res, BUSY_LINGER_MS, Number(ctx.get('content-length')) || LINGER_BYTES);
  else lingerThenClose(ctx.req, ctx.res);
}
