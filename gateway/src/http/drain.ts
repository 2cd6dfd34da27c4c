// Graceful shutdown's view of the traffic: which responses are still open, which of them are event
// streams (and how to end each with an in-band error event), and whether the gateway is draining.
// Built once in server.ts; the envelope tracks every response, stream writers register themselves.
// While draining, /readyz answers 503 and every answer not yet sent carries `Connection: close`, so
// keep-alive clients open their next request elsewhere.
import type { ServerResponse } from 'node:http';

/** The in-band event a stream still open at the shutdown deadline ends with; the SDKs raise it as an APIError. */
export const SHUTDOWN_EVENT = `data: ${JSON.stringify({
  error: { message: 'The gateway is shutting down and could not finish this stream in time; the answer is incomplete. Retry the request.', type: 'server_error', param: null, code: 'server_shutting_down' },
})}\n\n`;

export class Drain {
  #draining = false;
  readonly #open = new Set<ServerResponse>();
  readonly #streams = new Set<() => void>();
  #idle: Array<() => void> = [];

  get draining(): boolean {
    return this.#draining;
  }

  /** Responses not yet closed. */
  get open(): number {
    return this.#open.size;
  }

  /** Follows one response until it closes. */
  track(res: ServerResponse): void {
    if (this.#draining) res.setHeader('Connection', 'close');
    this.#open.add(res);
    res.once('close', () => {
      this.#open.delete(res);
      if (this.#open.size === 0) this.#wake();
    });
  }

  /** Registers an open stream and what ends it with SHUTDOWN_EVENT; returns its removal. */
  stream(endWithError: () => void): () => void {
    this.#streams.add(endWithError);
    return () => this.#streams.delete(endWithError);
  }

  /** Shutdown begins: readiness fails, answers not yet sent close their connection. */
  start(): void {
    this.#draining = true;
    for (const res of this.#open) if (!res.headersSent) res.setHeader('Connection', 'close');
  }

  /** The deadline: every stream still open ends with an in-band error event. */
  endStreams(): number {
    const streams = [...this.#streams];
    this.#streams.clear();
    for (const end of streams) end();
    return streams.length;
  }

  /** Resolves when no response is open, or after `ms`, whichever comes first. */
  idle(ms: number): Promise<void> {
    if (this.#open.size === 0) return Promise.resolve();
    return new Promise((resolve) => {
      const timer = setTimeout(done, Math.max(0, ms));
      function done() {
        clearTimeout(timer);
        resolve();
      }
      this.#idle.push(done);
    });
  }

  #wake(): void {
    const waiting = this.#idle;
    this.#idle = [];
    for (const resolve of waiting) resolve();
  }
}
