// Turns the OpenAI chat stream a backend writes into another dialect's stream (the Messages API's,
// Responses'), at the response itself: every backend writes its stream through the Node response
// (service-test through Koa's body pipe, relayed and translated streams by hand), so translating what
// reaches `write` and `end` serves them all, with their own backpressure (a write's return value is
// the socket's). An error answered before the stream began is left alone: it is already in the
// dialect's error shape (http/error-handler.ts).
//
// A dialect whose stream opens with an event of its own (the Messages API's message_start) writes it
// as the stream's headers go out, not at the backend's first token: a model that thinks for a minute
// first must not leave the client with no bytes. Its keep-alive runs only once the headers are out,
// so it never commits an answer the gateway could still change (a fallback, an error).
import { StringDecoder } from 'node:string_decoder';
import type { Context } from 'koa';

export interface DialectStream {
  /** Chat SSE text in (any split), the dialect's SSE text out ('' for nothing yet). */
  feed(text: string): string;
  /** The chat stream ended: the dialect's last events (a promise when something must happen first, such as storing the answer). */
  end(): string | Promise<string>;
  /** The stream's headers went out: the dialect's opening events ('' for none, or when they went already). */
  start?(): string;
}

export interface DialectStreamOptions {
  /** The events written after this long without one (the Messages API's `ping`; '' for none); no keep-alive when absent. */
  keepAlive?: { event: () => string; everyMs: number };
}

type WriteCallback = (error?: Error | null) => void;

export function translateChatStream(ctx: Context, translator: DialectStream, options: DialectStreamOptions = {}): void {
  const res = ctx.res;
  const decoder = new StringDecoder('utf8');
  const write = res.write.bind(res) as (...args: unknown[]) => boolean;
  const end = res.end.bind(res) as (...args: unknown[]) => typeof res;
  const writeHead = res.writeHead.bind(res) as (...args: unknown[]) => typeof res;
  let lastWrite = Date.now();
  const text = (chunk: unknown): string => (typeof chunk === 'string' ? chunk : chunk ? decoder.write(Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk as Uint8Array)) : '');
  const streaming = () => String(res.getHeader('content-type') ?? '').startsWith('text/event-stream');
  res.write = ((chunk: unknown, encoding?: unknown, callback?: unknown) => {
    if (!streaming()) return write(chunk, encoding, callback);
    const done = (typeof encoding === 'function' ? encoding : callback) as WriteCallback | undefined;
    const out = translator.feed(text(chunk));
    if (!out) {
      if (done) process.nextTick(done);
      return true;
    }
    lastWrite = Date.now();
    return write(out, done);
  }) as typeof res.write;
  if (translator.start) {
    const opening = translator.start.bind(translator);
    res.writeHead = ((...args: unknown[]) => {
      const result = writeHead(...args);
      // After the call that sent the headers, not inside it: Node may be sizing a body given to end().
      queueMicrotask(() => {
        if (res.writableEnded || res.destroyed || !streaming() || res.statusCode >= 300) return;
        const out = opening();
        if (out) {
          lastWrite = Date.now();
          write(out);
        }
      });
      return result;
    }) as typeof res.writeHead;
  }
  res.end = ((chunk?: unknown, encoding?: unknown, callback?: unknown) => {
    if (timer) clearInterval(timer);
    if (!streaming()) return end(chunk, encoding, callback);
    const done = [chunk, encoding, callback].find((a) => typeof a === 'function') as (() => void) | undefined;
    const out = translator.feed(typeof chunk === 'function' ? '' : text(chunk) + decoder.end());
    const tail = translator.end();
    if (typeof tail === 'string') return end(out + tail || undefined, done);
    // The head of the stream's end goes now; its last events when what they wait for is done.
    if (out) write(out);
    void tail.then(
      (last) => end(last || undefined, done),
      () => res.destroy(),
    );
    return res;
  }) as typeof res.end;
  const keepAlive = options.keepAlive;
  const timer = keepAlive
    ? setInterval(() => {
        if (!res.headersSent || !streaming() || res.writableEnded || Date.now() - lastWrite < keepAlive.everyMs) return;
        const out = keepAlive.event();
        if (!out) return;
        lastWrite = Date.now();
        write(out);
      }, keepAlive.everyMs / 2)
    : null;
  timer?.unref();
  if (timer) res.once('close', () => clearInterval(timer));
}
