// Graceful shutdown's view of the edge: whether the gateway is draining, and the responses still
// open, so that every answer not yet sent carries `Connection: close` (keep-alive clients open their
// next request elsewhere) and /readyz fails. Waiting for requests and ending the streams still open
// at the deadline go through the exchanges (exchange/exchanges.ts: idle(), abortAll('shutdown')); a
// stream aborted for 'shutdown' ends with SHUTDOWN_EVENT.
import type { ServerResponse } from 'node:http';

/** The in-band event a stream still open at the shutdown deadline ends with; the SDKs raise it as an APIError. */
export const SHUTDOWN_EVENT = `data: ${JSON.stringify({
  error: { message: 'The gateway is shutting down and could not finish this stream in time; the answer is incomplete. Retry the request.', type: 'server_error', param: null, code: 'server_shutting_down' },
})}\n\n`;

export class Drain {
  #draining = false;
  readonly #open = new Set<ServerResponse>();

  get draining(): boolean {
    return this.#draining;
  }

  /** Follows one response until `forget` (the caller's own 'close' listener: one per response is enough). */
  track(res: ServerResponse): void {
    if (this.#draining) res.setHeader('Connection', 'close');
    this.#open.add(res);
  }

  /** The response closed. */
  forget(res: ServerResponse): void {
    this.#open.delete(res);
  }

  /** Shutdown begins: readiness fails, answers not yet sent close their connection. */
  start(): void {
    this.#draining = true;
    for (const res of this.#open) if (!res.headersSent) res.setHeader('Connection', 'close');
  }
}
