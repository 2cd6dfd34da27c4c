// The exchanges of one gateway: built once in server.ts and passed down. Observers (metrics, spans)
// register hooks that every exchange runs at its start and end; graceful shutdown aborts the open
// ones with the reason 'shutdown' and waits for them to end. The open ones are the gateway's one list
// of requests in flight: shutdown (http/drain.ts) and the in-flight gauges (telemetry) read it.
import type { Logger } from 'pino';
import { Exchange, type AbortReason, type EndHook } from './exchange.ts';
import { OpenList } from './open-list.ts';

export type StartHook = (exchange: Exchange) => void;

export class Exchanges {
  readonly #log: Logger;
  /** A list, not a Set: see open-list.ts. */
  readonly #open = new OpenList<Exchange>();
  readonly #startHooks: StartHook[] = [];
  readonly #endHooks: EndHook[] = [];
  #idle: Array<() => void> = [];
  readonly #onHookError = (error: unknown, exchange: Exchange) => this.#log.error({ err: error, requestId: exchange.id }, 'a request end hook failed');

  constructor(log: Logger) {
    this.#log = log;
  }

  /** Runs for every new exchange, once it has its id (before authentication and routing). */
  onStart(hook: StartHook): void {
    this.#startHooks.push(hook);
  }

  /** Runs for every exchange at its end, after the exchange's own hooks (limits settled, spool removed). */
  onEnd(hook: EndHook): void {
    this.#endHooks.push(hook);
  }

  /** A new exchange for a request that just arrived; the edge must end() it. */
  begin(id: string, method: string, path: string): Exchange {
    const exchange = new Exchange({ id, method, path, onHookError: this.#onHookError, commonEndHooks: this.#endHooks, onDone: this.#forget });
    exchange.openLink = this.#open.add(exchange);
    for (const hook of this.#startHooks) {
      try {
        hook(exchange);
      } catch (error) {
        this.#onHookError(error, exchange);
      }
    }
    return exchange;
  }

  /** Requests not yet ended. */
  get open(): number {
    return this.#open.size;
  }

  /** The exchanges not yet ended, as a copy (safe to end or abort them while going through it). */
  openNow(): Exchange[] {
    return this.#open.values();
  }

  /** Aborts every open exchange (shutdown: streams end with an in-band error, upstream calls stop). */
  abortAll(reason: AbortReason): void {
    for (const exchange of this.openNow()) exchange.abort(reason);
  }

  /** Resolves when no exchange is open (every end hook of every request has run). */
  idle(): Promise<void> {
    if (this.#open.size === 0) return Promise.resolve();
    return new Promise((resolve) => this.#idle.push(resolve));
  }

  readonly #forget = (exchange: Exchange): void => {
    if (exchange.openLink) this.#open.remove(exchange.openLink);
    exchange.openLink = null;
    if (this.#open.size === 0 && this.#idle.length > 0) {
      const waiting = this.#idle;
      this.#idle = [];
      for (const resolve of waiting) resolve();
    }
  };
}
