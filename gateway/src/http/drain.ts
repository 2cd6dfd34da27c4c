// Graceful shutdown's view of the edge: whether the gateway is draining, and the responses still
// open, so that every answer not yet sent carries `Connection: close` (keep-alive clients open their
// next request elsewhere) and /readyz fails. Waiting for requests and ending the streams still open
// at the deadline go through the exchanges (exchange/exchanges.ts: idle(), abortAll('shutdown')); a
// stream aborted for 'shutdown' ends with SHUTDOWN_EVENT.
import type { ServerResponse } from 'node:http';
import { OpenList, type Link } from '../exchange/open-list.ts';

/** The in-band event a stream still open at the shutdown deadline ends with; the SDKs raise it as an APIError. */
export const SHUTDOWN_EVENT = `data: ${JSON.stringify({
  error: { message: 'The gateway is shutting down and could not finish this stream in time; the answer is incomplete. Retry the request.', type: 'server_error', param: null, code: 'server_shutting_down' },
})}\n\n`;

export class Drain {
  #draining = false;
  /** A list, not a Set: see exchange/open-list.ts. */
  readonly #open = new OpenList<ServerResponse>();

  get draining(): boolean {
    return this.#draining;
  }

  /** Follows one response until `forget` (the caller's own 'close' listener: one per response is enough). */
  track(res: ServerResponse): Link<ServerResponse> {
    if (this.#draining) res.setHeader('Connection', 'close');
    return this.#open.add(res);
  }

  /** The response closed. */
  forget(link: Link<ServerResponse>): void {
    this.#open.remove(link);
  }

  /** Shutdown begins: readiness fails, answers not yet sent close their connection. */
  start(): void {
    this.#draining = true;
    for (const res of this.#open.values()) if (!res.headersSent) res.setHeader('Connection', 'close');
  }
}
