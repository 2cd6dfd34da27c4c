// Writes that must happen exactly once (a budget settlement, a request's usage) but could not reach
// Redis. Each write carries an id that its script records as a marker (for MARKER_MS), so re-sending
// one whose first reply was lost changes nothing. They are kept here, bounded, and re-sent in order
// when Redis is back. A write whose effect is unknown (sent, no reply) is re-sent only while its
// marker still exists; after that it is dropped and logged: counting less is preferred to charging twice.
import type { Logger } from 'pino';
import { MARKER_MS, RedisUnavailableError } from './redis-client.ts';

/** Re-sending later than this after an unknown outcome could find the marker gone. */
const SAFE_RETRY_MS = MARKER_MS - 30_000;

interface Entry<T> {
  write: T;
  /** When a send of this write last ended without a reply (null: it never reached Redis). */
  unknownSince: number | null;
}

export class RedisRetryQueue<T> {
  readonly #send: (write: T) => Promise<unknown>;
  readonly #log: Logger;
  readonly #what: string;
  readonly #max: number;
  #entries: Array<Entry<T>> = [];
  #flushing: Promise<void> | null = null;
  /** Writes given up on (queue full, or too late to re-send safely), for a metric. */
  dropped = 0;

  constructor(what: string, send: (write: T) => Promise<unknown>, log: Logger, max = 100_000) {
    this.#what = what;
    this.#send = send;
    this.#log = log;
    this.#max = max;
  }

  get size(): number {
    return this.#entries.length;
  }

  /** Sends now; on failure keeps the write for later. Never throws. */
  async submit(write: T): Promise<void> {
    try {
      await this.#send(write);
    } catch (error) {
      this.#keep({ write, unknownSince: null }, error);
    }
  }

  /** Re-sends what was kept, in order, until one fails (Redis still away) or all are through. */
  flush(): Promise<void> {
    this.#flushing ??= this.#flushAll().finally(() => (this.#flushing = null));
    return this.#flushing;
  }

  async #flushAll(): Promise<void> {
    while (this.#entries.length > 0) {
      const entry = this.#entries[0];
      if (entry.unknownSince !== null && Date.now() - entry.unknownSince > SAFE_RETRY_MS) {
        this.#entries.shift();
        this.#drop(`${this.#what} dropped: its first attempt may have been applied and it is too late to re-send it safely`);
        continue;
      }
      try {
        await this.#send(entry.write);
      } catch (error) {
        if (error instanceof RedisUnavailableError && error.sent) entry.unknownSince ??= Date.now();
        return;
      }
      this.#entries.shift();
    }
  }

  #keep(entry: Entry<T>, error: unknown): void {
    if (error instanceof RedisUnavailableError && error.sent) entry.unknownSince = Date.now();
    else if (!(error instanceof RedisUnavailableError)) {
      // Not an outage (a script error): re-sending would fail the same way.
      this.#log.error({ err: error }, `${this.#what} failed and was not kept`);
      return;
    }
    if (this.#entries.length >= this.#max) {
      this.#entries.shift();
      this.#drop(`shared store away too long: the oldest kept ${this.#what} was dropped`);
    }
    this.#entries.push(entry);
    if (this.#entries.length === 1) this.#log.warn({ sharedStore: 'redis' }, `${this.#what} kept for retry until the shared store is back`);
  }

  #drop(message: string): void {
    this.dropped++;
    this.#log.error({ sharedStore: 'redis' }, message);
  }
}
