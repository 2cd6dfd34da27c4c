// Writes a relayed event stream to the client: what the upstream sends in one socket read becomes one
// write on the response. undici hands over an upstream's HTTP chunks one by one, several per socket
// read, in the same tick: they are gathered and relayed together on the next tick, so the relay
// searches them once and the client's socket sees one chunk header and one writev, not one per event.
//
// The gateway writes the response itself (`ctx.respond = false`) instead of handing Koa a body stream:
// Koa pipes bodies with stream.pipeline, which creates and aborts an AbortController (and so a
// DOMException) for every stream it finishes — 4.5% of a streaming benchmark's CPU — and needs a
// stream between relay and socket. Backpressure is kept by hand: a full socket pauses the upstream
// body, 'drain' resumes it, as pipe() would.
import type { ServerResponse } from 'node:http';
import type { Readable } from 'node:stream';
import { sinceAttempt, type Exchange, type UpstreamAttempt } from '../exchange/exchange.ts';
import { SHUTDOWN_EVENT } from '../http/drain.ts';
import type { SseRelay } from './sse-relay.ts';
import { ProviderStreamError } from '../providers/provider.ts';
import { IDLE_TIMEOUT } from './with-timeouts.ts';

type Output = Buffer | string;

/** What a relay read of the stream before handing it over (first-content.ts): written first; `ended`: all of it, the body is done. */
export interface StreamOpening {
  out: Output | null;
  ended: boolean;
}

export function writeEventStream(res: ServerResponse, exchange: Exchange, record: UpstreamAttempt, body: Readable, relay: SseRelay, opening?: StreamOpening): void {
  // Status and every header already set (request ids, rate-limit headers, Cache-Control) go out with
  // the first event when it is already here; otherwise on the next turn of the event loop, so the
  // client sees the stream start without waiting for the upstream's first token.
  res.writeHead(res.statusCode);
  let wrote = false;
  let ended = false;
  if (opening?.ended) {
    if (opening.out !== null) exchange.firstByteAt ??= performance.now();
    ended = true;
    if (opening.out === null) res.end();
    else res.end(opening.out);
    return;
  }
  if (opening && opening.out !== null) {
    exchange.firstByteAt ??= performance.now();
    wrote = true;
    if (!res.write(opening.out)) body.pause();
  }
  setImmediate(() => {
    if (!wrote && !ended && !res.destroyed) res.flushHeaders();
  });

  let input: Buffer[] = [];
  let scheduled = false;
  /** The relay's output for what has arrived since the last flush (may throw: the relay runs hooks). */
  const relayInput = (): Output | null => {
    if (input.length === 0) return null;
    const chunk = input.length === 1 ? input[0] : Buffer.concat(input);
    input = [];
    return relay.feed(chunk);
  };
  const flush = () => {
    scheduled = false;
    if (ended) return;
    let out: Output | null;
    try {
      out = relayInput();
    } catch (error) {
      return fail(error as Error);
    }
    if (out === null) return;
    if (!wrote) exchange.firstByteAt ??= performance.now();
    wrote = true;
    if (!res.write(out)) body.pause();
  };
  const finish = (outputs: Array<Output | null>) => {
    ended = true;
    const out = joined(outputs.filter((o): o is Output => o !== null));
    if (out === null) res.end();
    else res.end(out);
  };
  function fail(error: Error & { code?: string }): void {
    if (ended) return;
    body.destroy();
    // Aborted by the shutdown deadline: the client is still there and gets an error event it can raise.
    const shutdown = exchange.abortReason === 'shutdown' && !res.destroyed;
    if (!shutdown && (exchange.aborted || res.destroyed)) {
      ended = true;
      return void res.destroy();
    }
    // Whole events that arrived before the failure still go out; then the error event, as a frame of
    // its own (the relay holds back a half-arrived event, or, for one too large to hold, ends it).
    let before: Output | null = null;
    let cut: Output | null = null;
    try {
      before = relayInput();
    } catch {}
    try {
      cut = relay.cut();
    } catch {}
    if (shutdown) {
      exchange.streamError = 'server_shutting_down';
      const message = 'The gateway is shutting down and could not finish this stream in time; the answer is incomplete. Retry the request.';
      return finish([before, cut, relay.errorEvent ? relay.errorEvent({ message, type: 'server_error', code: 'server_shutting_down' }) : SHUTDOWN_EVENT]);
    }
    // A translated provider's failure in its stream (its error event, an exception frame, a stream that
    // ended before its terminal event) says what went wrong in its own words.
    const provider = error instanceof ProviderStreamError ? error : null;
    const code = provider ? provider.code : error.code === IDLE_TIMEOUT ? 'upstream_idle_timeout' : error.code === 'upstream_event_too_large' ? error.code : 'upstream_stream_error';
    const message = provider
      ? provider.message
      : code === 'upstream_event_too_large'
        ? 'The upstream sent an event larger than the gateway accepts (TOLLGATE_MAX_SSE_EVENT_BYTES); the answer is incomplete.'
        : 'The upstream stream failed before it completed; the answer is incomplete. Retry the request.';
    // The recorded code is a label of metrics: one for every provider failure, whatever the provider called it.
    exchange.streamError = provider ? 'upstream_stream_error' : code;
    const type = provider?.type ?? 'server_error';
    finish([before, cut, relay.errorEvent ? relay.errorEvent({ message, type, code }) : `data: ${JSON.stringify({ error: { message, type, param: null, code } })}\n\n`]);
  }

  body.on('data', (chunk: Buffer) => {
    if (ended) return;
    if (record.firstByteMs === null) record.firstByteMs = sinceAttempt(record);
    input.push(chunk);
    if (!scheduled) {
      scheduled = true;
      process.nextTick(flush);
    }
  });
  const onEnd = () => {
    if (ended) return;
    let last: Output | null = null;
    let outputs: Array<Output | null>;
    try {
      last = relayInput();
      outputs = [last, relay.end()];
    } catch (error) {
      // The last read's whole events go out before the failure that end() reports.
      if (last !== null && !res.destroyed) {
        wrote = true;
        res.write(last);
      }
      return fail(error as Error);
    }
    finish(outputs);
  };
  body.once('end', onEnd);
  // on, not once: a listener must stay for an error that comes after the client left and the body was destroyed.
  body.on('error', fail);
  res.on('drain', () => body.resume());
  // The shutdown deadline aborts the exchange; the upstream body may not report it as an error.
  exchange.onAbort(() => fail(new Error('shutdown')));
  res.once('close', () => {
    if (ended) return;
    ended = true;
    body.destroy();
  });
  // A body read before (the opening) was left paused: it flows again now that it is listened to, or
  // it has already ended or failed (its last events were in the opening, or it broke meanwhile).
  if (opening) {
    if (body.errored) fail(body.errored as Error);
    else if (body.readableEnded) onEnd();
    else if (res.writableNeedDrain !== true) body.resume();
  }
}

function joined(outputs: Output[]): Output | null {
  if (outputs.length <= 1) return outputs[0] ?? null;
  if (outputs.every((out) => typeof out === 'string')) return outputs.join('');
  return Buffer.concat(outputs.map((out) => (typeof out === 'string' ? Buffer.from(out) : out)));
}
