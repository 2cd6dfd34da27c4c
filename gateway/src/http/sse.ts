// Server-sent events the way the official SDKs read them: `data: <json>\n\n` per event, `[DONE]` at
// the end for chat, no compression or proxy buffering, and headers flushed before the first event.
import { PassThrough } from 'node:stream';
import type { Context } from 'koa';
import type { RequestTelemetry } from '../telemetry/request-telemetry.ts';

export class SseStream {
  readonly stream = new PassThrough();
  #closed = false;
  /** Told when the first event goes out (time to first token); cleared after. */
  #telemetry: RequestTelemetry | null;

  constructor(ctx: Context) {
    this.#telemetry = (ctx.state as { telemetry?: RequestTelemetry }).telemetry ?? null;
    ctx.status = 200;
    ctx.type = 'text/event-stream; charset=utf-8';
    ctx.set('Cache-Control', 'no-cache');
    ctx.set('Connection', 'keep-alive');
    ctx.set('X-Accel-Buffering', 'no');
    ctx.body = this.stream;
    ctx.req.socket.setNoDelay(true);
    this.stream.on('close', () => {
      this.#closed = true;
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
    if (this.#telemetry) {
      this.#telemetry.firstByteAt = performance.now();
      this.#telemetry = null;
    }
    const payload = `${event ? `event: ${event}\n` : ''}data: ${typeof data === 'string' ? data : JSON.stringify(data)}\n\n`;
    if (!this.stream.write(payload)) await new Promise<void>((resolve) => this.stream.once('drain', resolve).once('close', resolve));
  }

  end(): void {
    if (!this.#closed) this.stream.end();
    this.#closed = true;
  }
}
