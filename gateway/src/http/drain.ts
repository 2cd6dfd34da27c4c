// Graceful shutdown's view of the edge: whether the gateway is draining, so that every answer not yet
// sent carries `Connection: close` (keep-alive clients open their next request elsewhere) and /readyz
// fails. The requests in flight are the open exchanges (exchange/exchanges.ts), which also give the
// waiting for them (idle()) and the ending of the streams still open at the deadline
// (abortAll('shutdown')); a stream aborted for 'shutdown' ends with SHUTDOWN_EVENT.
import type { ServerResponse } from 'node:http';
import type { Exchanges } from '../exchange/exchanges.ts';

/** The in-band event a stream still open at the shutdown deadline ends with; the SDKs raise it as an APIError. */
export const SHUTDOWN_EVENT = `data: ${JSON.stringify({
  error: { message: 'The gateway is shutting down and could not finish this stream in time; the answer is incomplete. Retry the request.', type: 'server_error', param: null, code: 'server_shutting_down' },
})}\n\n`;

export class Drain {
  #draining = false;
  readonly #exchanges: Exchanges;

  constructor(exchanges: Exchanges) {
    this.#exchanges = exchanges;
  }

  get draining(): boolean {
    return this.#draining;
  }

  /** A request arrived: once draining, its answer closes its connection. */
  admit(res: ServerResponse): void {
    if (this.#draining) res.setHeader('Connection', 'close');
  }

  /** Shutdown begins: readiness fails, answers not yet sent close their connection. */
  start(): void {
    this.#draining = true;
    for (const { response } of this.#exchanges.openNow()) if (response && !response.headersSent) response.setHeader('Connection', 'close');
  }
}
