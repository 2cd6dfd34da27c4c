// Server-sent events the way the official SDKs read them: `data: <json>\n\n` per event, `[DONE]` at
// the end for chat, no compression or proxy buffering, and headers flushed before the first event.
import { PassThrough } from 'node:stream';
import type { Context } from 'koa';
import { SHUTDOWN_EVENT } from './drain.ts';
import type { Exchange } from '../exchange/exchange.ts';
import type { GatewayState } from './state.ts';

export class SseStream {
  readonly stream = new PassThrough();
  #closed = false;
  /** The request's exchange until the first event has gone (its time to first token); null after. */
  #firstFor: Exchange | null = null;

  constructor(ctx: Context) {
    ctx.status = 200;
    ctx.type = 'text/event-stream; charset=utf-8';
    ctx.set('Cache-Control', 'no-cache');
    if (!(ctx.state as GatewayState).drain?.draining) ctx.set('Connection', 'keep-alive');
    ctx.set('X-Accel-Buffering', 'no');
    ctx.body = this.stream;
    ctx.req.socket.setNoDelay(true);
    const exchange = (ctx.state as GatewayState).exchange;
    exchange.stream = true;
    this.#firstFor = exchange;
    this.stream.on('close', () => {
      this.#closed = true;
    });
    // Still open at the shutdown deadline: ended with an error event the SDKs raise, not cut off.
    exchange.onAbort(() => {
      if (exchange.abortReason !== 'shutdown' || this.#closed) return;
      this.#closed = true;
      this.stream.end(SHUTDOWN_EVENT);
    });
    ctx.res.on('close', () => {
      this.#closed = true;
    });
  }

  /** False once the client has gone away; generators stop producing then. */
  get open(): boolean {
    return !this.#closed;
  }

  /** Writes one event; resolves when the socket can take more (backpressure). */
  async send(data: unknown, event?: string): Promise<void> {
    if (this.#closed) return;
    if (this.#firstFor) {
      this.#firstFor.firstByteAt ??= performance.now();
      this.#firstFor = null;
    }
    const payload = `${event ? `event: ${event}\n` : ''}data: ${typeof data === 'string' ? data : JSON.stringify(data)}\n\n`;
    if (!this.stream.write(payload)) await this.#drained();
  }

  /** Resolves on 'drain' or 'close', whichever comes first, and leaves no listener behind. */
  #drained(): Promise<void> {
    return new Promise<void>((resolve) => {
      const done = () => {
        this.stream.off('drain', done);
        this.stream.off('close', done);
        resolve();
      };
      this.stream.on('drain', done);
      this.stream.on('close', done);
    });
  }

  end(): void {
    if (!this.#closed) this.stream.end();
    this.#closed = true;
  }
}
