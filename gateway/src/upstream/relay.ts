// Relays an upstream answer that the gateway has decided to keep: event streams event by event,
// JSON parsed (to rewrite the model and read usage), anything else streamed through as bytes. Every
// path keeps Node's backpressure: a client that reads slowly slows the upstream read down with it.
import { PassThrough, type Readable } from 'node:stream';
import type { Context } from 'koa';
import type { Dispatcher } from 'undici';
import { ApiError } from '../http/errors.ts';
import type { GatewayState } from '../http/state.ts';
import { SseRelay, usageFromChat } from './sse-relay.ts';
import type { Attempt } from './targets.ts';
import { scrub } from './upstream-error.ts';

export interface RelayOptions {
  /** The model name clients know; null when the request named none (nothing to rewrite). */
  publicModel: string | null;
  streamKind?: 'chat' | 'responses' | 'other';
  stripUsageChunk: boolean;
  /** Stream the body through untouched whatever its type (file content may be labelled JSON). */
  raw?: boolean;
  onAnswered?: (upstream: string, json: unknown) => void;
  onResponseId?: (upstream: string, id: string) => void;
  /** Sees the data of every event of a relayed stream (ids of objects created by a run, say). */
  onEventData?: (upstream: string, data: string) => void;
}

const BINARY_HEADERS = new Set(['content-type', 'content-disposition']);
const MAX_JSON_ANSWER = 64 * 1024 * 1024;

export async function relayAnswer(ctx: Context, response: Dispatcher.ResponseData, attempt: Attempt, options: RelayOptions, secret: string | null, clientGone: AbortController): Promise<void> {
  const state = ctx.state as GatewayState;
  const upstreamName = attempt.upstream.metadata.name;
  const contentType = String(response.headers['content-type'] ?? 'application/octet-stream');
  const upstreamModel = attempt.upstreamModel ?? options.publicModel ?? '';
  const publicModel = options.publicModel ?? upstreamModel;
  ctx.status = response.statusCode;

  if (!options.raw && contentType.startsWith('text/event-stream')) {
    ctx.set('Cache-Control', 'no-cache');
    ctx.set('X-Accel-Buffering', 'no');
    ctx.type = contentType;
    ctx.req.socket.setNoDelay(true);
    const relay = new SseRelay({
      kind: options.streamKind ?? 'other',
      publicModel,
      upstreamModel,
      stripUsageChunk: options.stripUsageChunk,
      onUsage: (usage) => (state.usage = usage),
      onResponseId: (id) => options.onResponseId?.(upstreamName, id),
      onEventData: options.onEventData && ((data) => options.onEventData!(upstreamName, data)),
    });
    const out = new PassThrough();
    ctx.body = out;
    // Headers go out now: the client sees the stream start without waiting for the first event.
    ctx.flushHeaders?.();
    // pipe() and explicit error handling rather than stream.pipeline(): pipeline creates and aborts an
    // AbortController (and so a DOMException) for every stream it finishes, which was 6% of the CPU
    // of a streaming benchmark. Backpressure is the same: each pipe pauses its source.
    let ended = false;
    const fail = (error: Error & { code?: string }) => {
      if (ended) return;
      ended = true;
      relay.unpipe(out);
      response.body.destroy();
      relay.destroy();
      if (clientGone.signal.aborted) return void out.destroy();
      const code = error.code === 'UND_ERR_BODY_TIMEOUT' ? 'upstream_idle_timeout' : 'upstream_stream_error';
      out.end(`data: ${JSON.stringify({ error: { message: 'The upstream stream failed before it completed; the answer is incomplete. Retry the request.', type: 'server_error', param: null, code } })}\n\n`);
      state.streamError = code;
    };
    response.body.once('error', fail);
    relay.once('error', fail);
    relay.once('end', () => (ended = true));
    response.body.pipe(relay).pipe(out);
    return;
  }

  if (!options.raw && contentType.includes('json')) {
    const text = await readText(response.body, MAX_JSON_ANSWER);
    let parsed: Record<string, unknown> | null = null;
    try {
      parsed = JSON.parse(text);
    } catch {
      throw new ApiError(502, 'upstream_invalid_response', `The upstream provider '${upstreamName}' sent a malformed JSON answer.`);
    }
    const usage = usageFromChat(parsed?.usage);
    if (usage) state.usage = usage;
    options.onAnswered?.(upstreamName, parsed);
    if (parsed && typeof parsed.model === 'string' && publicModel !== upstreamModel) {
      parsed.model = publicModel;
      ctx.body = parsed;
    } else {
      ctx.type = 'application/json';
      ctx.body = scrub(text, secret);
    }
    return;
  }

  // Binary answers (audio, transcripts as text, file content): streamed through with their own type and length.
  for (const [name, value] of Object.entries(response.headers)) {
    if ((BINARY_HEADERS.has(name) || name.startsWith('openai-')) && value !== undefined) ctx.set(name, String(value));
  }
  // The bytes are the upstream's (or a client's upload), never a page of this origin.
  ctx.set('X-Content-Type-Options', 'nosniff');
  // Body first: Koa drops a Content-Length set before a stream body replaces another body.
  ctx.body = response.body;
  if (response.headers['content-length']) ctx.length = Number(response.headers['content-length']);
}

/** Reads a small upstream body (an error, a JSON answer), refusing one past `limit`. */
export async function readText(body: Readable, limit: number): Promise<string> {
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
