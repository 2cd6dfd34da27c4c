// Turns the OpenAI chat stream a backend writes into the Messages API's stream, at the response
// itself: every backend writes its stream through the Node response (service-test through Koa's
// body pipe, relayed and translated streams by hand), so translating what reaches `write` and `end`
// serves them all, with their own backpressure (a write's return value is the socket's). During long
// silences (a model thinking) a `ping` event keeps proxies and clients from giving up, as Anthropic's own.
import { StringDecoder } from 'node:string_decoder';
import type { Context } from 'koa';
import { ChatToMessagesStream } from '../dialects/anthropic/stream.ts';

const PING_MS = 10_000;

type WriteCallback = (error?: Error | null) => void;

export function translateStreamToMessages(ctx: Context, model: string, requestId: string, inputEstimate: number): void {
  const res = ctx.res;
  const translator = new ChatToMessagesStream(model, requestId, inputEstimate);
  const decoder = new StringDecoder('utf8');
  const write = res.write.bind(res) as (chunk: string, callback?: WriteCallback) => boolean;
  const end = res.end.bind(res) as (chunk?: string, callback?: () => void) => typeof res;
  let lastWrite = Date.now();
  const text = (chunk: unknown): string => (typeof chunk === 'string' ? chunk : chunk ? decoder.write(Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk as Uint8Array)) : '');
  // Only an event stream is translated: an error answered before the stream began is already in
  // Anthropic's envelope (http/error-handler.ts).
  const streaming = () => String(res.getHeader('content-type') ?? '').startsWith('text/event-stream');
  res.write = ((chunk: unknown, encoding?: unknown, callback?: unknown) => {
    if (!streaming()) return (write as (...args: unknown[]) => boolean)(chunk, encoding, callback);
    const done = (typeof encoding === 'function' ? encoding : callback) as WriteCallback | undefined;
    const out = translator.feed(text(chunk));
    if (!out) {
      if (done) process.nextTick(done);
      return true;
    }
    lastWrite = Date.now();
    return write(out, done);
  }) as typeof res.write;
  res.end = ((chunk?: unknown, encoding?: unknown, callback?: unknown) => {
    clearInterval(ping);
    if (!streaming()) return (end as (...args: unknown[]) => typeof res)(chunk, encoding, callback);
    const done = [chunk, encoding, callback].find((a) => typeof a === 'function') as (() => void) | undefined;
    const rest = typeof chunk === 'function' ? '' : text(chunk) + decoder.end();
    const out = translator.feed(rest) + translator.end();
    return end(out || undefined, done);
  }) as typeof res.end;
  const ping = setInterval(() => {
    if (translator.started && !res.writableEnded && !translator.finished && Date.now() - lastWrite >= PING_MS) {
      lastWrite = Date.now();
      write('event: ping\ndata: {"type":"ping"}\n\n');
    }
  }, PING_MS / 2);
  ping.unref();
  res.once('close', () => clearInterval(ping));
}
